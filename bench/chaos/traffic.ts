import type { ChatUser } from "../../src/chat/index.js";
import type { Replayer } from "./replay.js";

/** One message the benchmark sent, and what the playground answered. */
export interface SentMessage {
  thread: number;
  /** Send order within the thread, from 0. */
  seq: number;
  /** `[c<thread>.<seq>]`, carried in the text (see `TAG`). */
  tag: string;
  /** The playground's message id once accepted. */
  id: string | undefined;
  /** The HTTP API answered 2xx: the platform told the user "got it". */
  accepted: boolean;
  /** Why it was not accepted (HTTP status or network error). */
  error?: string;
  /** Replays (same message id, second gateway replica) that went through. */
  replayed: number;
}

/** One simulated person and their thread. */
export interface ThreadTraffic {
  index: number;
  user: ChatUser;
  /** The playground thread id once its first message was accepted. */
  playgroundId: string | undefined;
  messages: SentMessage[];
}

/** Options of {@link Traffic}. */
export interface TrafficOptions {
  /** The gateway's playground, e.g. `http://127.0.0.1:4000`. */
  url: string;
  threads: number;
  messages: number;
  /** Sends are spread over this window (a slow answer delays a thread's later sends, never reorders them). */
  durationMs: number;
  /** Share of accepted messages that are replayed (platform retries). */
  retryRate: number;
  random: () => number;
  replayer: Replayer;
}

interface PlannedMessage {
  dueMs: number;
  /** Replay delay after acceptance, or undefined for no replay. */
  replayAfterMs: number | undefined;
}

const BOT = "@Threadline";
const POST_TIMEOUT_MS = 30_000;

/**
 * The users of a chaos run: each thread's person sends their messages one at a time, in order (the next
 * only after the playground answered the previous one), on a jittered schedule planned up front from the
 * seeded random source. The first accepted message creates the thread (mentioning the bot); later ones are
 * replies, which start a run when the thread is idle or steer the active one. A share of accepted messages
 * is handed a second time, with the same id, to a second gateway replica ({@link Replayer}), right away or
 * up to 3 s later, retried until Redis takes it (bounded).
 */
export class Traffic {
  readonly threads: ThreadTraffic[];
  readonly replays = { done: 0, failed: 0 };
  private readonly plans: PlannedMessage[][];
  private readonly pending = new Set<Promise<void>>();

  constructor(private readonly options: TrafficOptions) {
    const { threads, messages, durationMs, random, retryRate } = options;
    this.threads = [];
    this.plans = [];
    for (let index = 0; index < threads; index++) {
      const count = Math.floor(messages / threads) + (index < messages % threads ? 1 : 0);
      const gap = durationMs / Math.max(1, count);
      const offset = random() * gap;
      const plan: PlannedMessage[] = [];
      for (let seq = 0; seq < count; seq++) {
        const replay = random() < retryRate;
        const soon = random() < 0.5;
        plan.push({
          dueMs: offset + seq * gap + (random() - 0.5) * gap * 0.6,
          replayAfterMs: replay ? (soon ? 0 : random() * 3000) : undefined,
        });
      }
      this.plans.push(plan);
      this.threads.push({
        index,
        user: { id: `u-chaos-${index}`, name: `Chaos ${index}` },
        playgroundId: undefined,
        messages: [],
      });
    }
  }

  /** Sends everything; resolves once every send and replay settled. */
  async run(): Promise<void> {
    const started = performance.now();
    await Promise.all(this.threads.map((thread) => this.runThread(thread, started)));
    while (this.pending.size > 0) await Promise.all([...this.pending]);
  }

  /** Messages sent so far (accepted or not). */
  get sent(): number {
    return this.threads.reduce((sum, thread) => sum + thread.messages.length, 0);
  }

  private async runThread(thread: ThreadTraffic, started: number): Promise<void> {
    const plan = this.plans[thread.index]!;
    for (const [seq, planned] of plan.entries()) {
      const wait = started + planned.dueMs - performance.now();
      if (wait > 0) await sleep(wait);
      const message: SentMessage = {
        thread: thread.index,
        seq,
        tag: `[c${thread.index}.${seq}]`,
        id: undefined,
        accepted: false,
        replayed: 0,
      };
      thread.messages.push(message);
      const creates = thread.playgroundId === undefined;
      const text = creates
        ? `${BOT} ${message.tag} hello from thread ${thread.index}`
        : `${message.tag} message ${seq} of thread ${thread.index}`;
      try {
        const body = await this.post(thread, text);
        message.id = body.message.id;
        message.accepted = true;
        if (creates) thread.playgroundId = body.thread?.id;
      } catch (err) {
        message.error = (err as Error).message;
        continue;
      }
      if (planned.replayAfterMs !== undefined)
        this.scheduleReplay(thread, message, text, planned.replayAfterMs);
    }
  }

  private async post(
    thread: ThreadTraffic,
    text: string,
  ): Promise<{ message: { id: string }; thread?: { id: string } }> {
    const path =
      thread.playgroundId === undefined ? "/api/threads" : `/api/threads/${thread.playgroundId}/messages`;
    let response: Response;
    try {
      response = await fetch(`${this.options.url}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ user: thread.user, text }),
        signal: AbortSignal.timeout(POST_TIMEOUT_MS),
      });
    } catch (err) {
      throw new Error(`network: ${(err as Error).name}`);
    }
    if (!response.ok) {
      await response.arrayBuffer().catch(() => undefined);
      throw new Error(`HTTP ${response.status}`);
    }
    return (await response.json()) as { message: { id: string }; thread?: { id: string } };
  }

  private scheduleReplay(thread: ThreadTraffic, message: SentMessage, text: string, afterMs: number): void {
    const replay = (async () => {
      if (afterMs > 0) await sleep(afterMs);
      const mentionsBot = text.startsWith(BOT);
      const again = {
        thread: thread.playgroundId!,
        id: message.id!,
        author: thread.user,
        text: mentionsBot ? text.slice(BOT.length).trim() : text,
        mentionsBot,
      };
      for (let attempt = 0; attempt < 40; attempt++) {
        try {
          await this.options.replayer.replay(again);
          message.replayed++;
          this.replays.done++;
          return;
        } catch {
          await sleep(500);
        }
      }
      this.replays.failed++;
    })();
    this.pending.add(replay);
    void replay.finally(() => this.pending.delete(replay));
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
