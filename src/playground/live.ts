import type { ServerResponse } from "node:http";
import type { Cluster, Redis } from "ioredis";

const NOTICE_PREFIX = '{"type":"notice"';

/** Interval of the SSE comment that keeps idle connections (and proxies) open. */
const KEEPALIVE_MS = 20_000;

interface Client {
  res: ServerResponse;
  userId: string | undefined;
}

/**
 * Fans the playground's Redis channel out to browsers over Server-Sent Events. One subscriber connection
 * per server, whatever the number of browsers; each event is forwarded as the JSON text Redis delivered
 * (no re-encoding), and private notices only to the browser of their user.
 */
export class LiveUpdates {
  private readonly clients = new Set<Client>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly subscriber: Redis | Cluster,
    private readonly channel: string,
  ) {}

  /** Subscribes; resolves once Redis confirmed the subscription (no event after that is missed). */
  async start(): Promise<void> {
    this.subscriber.on("message", (channel: string, json: string) => {
      if (channel === this.channel) this.broadcast(json);
    });
    await this.subscriber.subscribe(this.channel);
    this.timer = setInterval(() => {
      for (const client of this.clients) client.res.write(": keep-alive\n\n");
    }, KEEPALIVE_MS);
    this.timer.unref();
  }

  /** Turns a response into an event stream until the browser leaves. */
  attach(res: ServerResponse, userId: string | undefined): void {
    res.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache, no-transform",
      connection: "keep-alive",
      "x-accel-buffering": "no",
    });
    // The browser reconnects after 2 s and then refetches what it shows (events are idempotent).
    res.write("retry: 2000\n\n");
    const client: Client = { res, userId };
    this.clients.add(client);
    res.on("close", () => this.clients.delete(client));
  }

  /** Number of connected browsers. */
  get size(): number {
    return this.clients.size;
  }

  /** Ends every stream and the subscription. */
  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    for (const client of this.clients) client.res.end();
    this.clients.clear();
    this.subscriber.disconnect();
  }

  private broadcast(json: string): void {
    // Events are serialized with `type` first; only private notices need parsing (to find their reader).
    const recipient = json.startsWith(NOTICE_PREFIX)
      ? (JSON.parse(json) as { userId?: string }).userId
      : undefined;
    const frame = `data: ${json}\n\n`;
    for (const client of this.clients) {
      if (recipient === undefined || client.userId === recipient) client.res.write(frame);
    }
  }
}
