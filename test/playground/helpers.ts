import { type IncomingMessage as HttpResponse, request } from "node:http";
import type { Redis } from "ioredis";
import type {
  ButtonClick,
  ButtonReply,
  ChatInbound,
  IncomingMessage,
  ReactionEvent,
  ThreadRef,
} from "../../src/chat/index.js";
import {
  createPlaygroundPlatform,
  type PlaygroundEvent,
  type PlaygroundPlatform,
  PlaygroundStore,
} from "../../src/playground/index.js";
import { playgroundKeys } from "../../src/runs/index.js";
import { connect, deletePrefix, requireRedis, uniquePrefix } from "../support/redis.js";

/** One event a {@link RecordingInbound} received. */
export type InboundEvent =
  | { kind: "message"; message: IncomingMessage }
  | { kind: "edited"; message: IncomingMessage }
  | { kind: "deleted"; thread: ThreadRef; messageId: string }
  | { kind: "reaction"; event: ReactionEvent }
  | { kind: "button"; click: ButtonClick };

/** A ChatInbound that records what the playground hands it (the gateway's side of the port). */
export class RecordingInbound implements ChatInbound {
  readonly events: InboundEvent[] = [];
  /** Early acknowledgements asked for, and whether the message had reached `message` by then. */
  readonly acknowledged: { messageId: string; authorId: string; handedFirst: boolean }[] = [];
  /** What `button` answers. */
  buttonReply: ButtonReply = { kind: "none" };

  async acknowledge(_thread: ThreadRef, messageId: string, authorId: string) {
    const handedFirst = this.events.some(
      (event) => event.kind === "message" && event.message.id === messageId,
    );
    this.acknowledged.push({ messageId, authorId, handedFirst });
  }
  async message(message: IncomingMessage) {
    this.events.push({ kind: "message", message });
  }
  async messageEdited(message: IncomingMessage) {
    this.events.push({ kind: "edited", message });
  }
  async messageDeleted(thread: ThreadRef, messageId: string) {
    this.events.push({ kind: "deleted", thread, messageId });
  }
  async reaction(event: ReactionEvent) {
    this.events.push({ kind: "reaction", event });
  }
  async button(click: ButtonClick) {
    this.events.push({ kind: "button", click });
    return this.buttonReply;
  }
}

/** A playground gateway (HTTP on a free port) and a worker-side outbound on its own Redis connection. */
export class PlaygroundFixture {
  readonly prefix = uniquePrefix("playground");
  readonly redis: Redis = connect();
  /** The worker process's connection: changes it makes reach the gateway only through Redis. */
  readonly workerRedis: Redis = connect();
  readonly inbound = new RecordingInbound();
  readonly gateway: PlaygroundPlatform;
  readonly worker: PlaygroundPlatform;
  readonly store: PlaygroundStore;
  private readonly streams: EventStream[] = [];

  constructor() {
    this.gateway = createPlaygroundPlatform({
      redis: this.redis,
      keys: playgroundKeys(this.prefix),
      port: 0,
    });
    this.worker = createPlaygroundPlatform({ redis: this.workerRedis, keys: playgroundKeys(this.prefix) });
    this.store = new PlaygroundStore(this.redis, { keys: playgroundKeys(this.prefix) });
  }

  async start(): Promise<this> {
    await requireRedis(this.redis);
    await this.gateway.start(this.inbound);
    return this;
  }

  get url(): string {
    if (this.gateway.url === undefined) throw new Error("the playground is not started");
    return this.gateway.url.replace("localhost", "127.0.0.1");
  }

  /** Sends a JSON request the way the page does. */
  async api(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
    const init: RequestInit = { method, headers: { ...headers } };
    if (body !== undefined) {
      init.headers = { "content-type": "application/json", ...headers };
      init.body = JSON.stringify(body);
    }
    const response = await fetch(`${this.url}${path}`, init);
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  }

  /** Opens the live event stream as `userId`'s browser would. */
  async events(userId?: string): Promise<EventStream> {
    const stream = await EventStream.open(`${this.url}/api/events${userId ? `?user=${userId}` : ""}`);
    this.streams.push(stream);
    return stream;
  }

  async close(): Promise<void> {
    for (const stream of this.streams) stream.close();
    await this.gateway.stop();
    await deletePrefix(this.redis, this.prefix);
    this.redis.disconnect();
    this.workerRedis.disconnect();
  }
}

/** A Server-Sent Events client that collects the playground's events in arrival order. */
export class EventStream {
  readonly received: PlaygroundEvent[] = [];
  private waiters: { predicate: (events: PlaygroundEvent[]) => boolean; resolve: () => void }[] = [];

  private constructor(private readonly response: HttpResponse) {
    let buffer = "";
    response.setEncoding("utf8");
    response.on("data", (data: string) => {
      buffer += data;
      const frames = buffer.split("\n\n");
      buffer = frames.pop() ?? "";
      for (const frame of frames) {
        const data = frame
          .split("\n")
          .filter((line) => line.startsWith("data: "))
          .map((line) => line.slice(6))
          .join("\n");
        if (data !== "") this.received.push(JSON.parse(data) as PlaygroundEvent);
      }
      this.waiters = this.waiters.filter((waiter) => {
        if (!waiter.predicate(this.received)) return true;
        waiter.resolve();
        return false;
      });
    });
  }

  static open(url: string): Promise<EventStream> {
    return new Promise((resolve, reject) => {
      request(url, (response) => {
        if (response.statusCode !== 200) reject(new Error(`event stream answered ${response.statusCode}`));
        else resolve(new EventStream(response));
      })
        .on("error", reject)
        .end();
    });
  }

  /** Resolves once `predicate(received)` holds (checked on every event; bounded by the test timeout). */
  waitFor(predicate: (events: PlaygroundEvent[]) => boolean): Promise<void> {
    if (predicate(this.received)) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ predicate, resolve }));
  }

  /** Resolves once `count` events arrived. */
  waitForCount(count: number): Promise<void> {
    return this.waitFor((events) => events.length >= count);
  }

  close(): void {
    this.response.destroy();
  }
}

export { freePort } from "../support/net.js";
