import { EventEmitter } from "node:events";

/** A message in the fake workspace (users' and the bot's). */
export interface FakeMessage {
  channel: string;
  ts: string;
  /** Root ts for replies; the message's own ts for a root that has replies; absent otherwise. */
  threadTs?: string;
  /** Author user id (the bot user for the bot's messages). */
  user: string;
  botId?: string;
  text: string;
  blocks?: unknown[];
  files?: Record<string, unknown>[];
  /** Reaction name → user ids. */
  reactions: Map<string, Set<string>>;
  /** A native stream still open. */
  streaming: boolean;
  /** Created through `chat.startStream`. */
  streamed: boolean;
  /** Successful `chat.update`s and stream appends. */
  edits: number;
  /** Every text the message showed, in order. */
  history: string[];
  deleted: boolean;
  /** When the native stream started (the fake's clock), for its lifetime. */
  streamStartedAt?: number;
  /** Characters the stream has accepted so far (its cumulative cap). */
  streamChars?: number;
  /** `task_update` chunks by task id, latest state (native streams). */
  tasks?: Map<string, Record<string, unknown>>;
  /** Blocks rendered at the bottom of a stopped stream (`chat.stopStream` `blocks`). */
  footerBlocks?: unknown[];
}

/** An agent session (`agents.sessions.setStatus`): one per thread. */
export interface FakeSession {
  channel: string;
  threadTs: string;
  status: string;
  /** Set when the session was created; later titles are ignored, as Slack does. */
  title?: string;
  initiator?: string;
  /** Every status the session had, in order. */
  history: string[];
}

/** One Web API call as the fake received it. */
export interface ApiCall {
  method: string;
  args: Record<string, unknown>;
  /** "ok", Slack's error code, or "ratelimited" for an HTTP 429. */
  outcome: string;
  at: number;
  /** `performance.now()` when the call arrived (benchmarks). */
  hrAt: number;
}

/** An ephemeral message (`chat.postEphemeral`). */
export interface FakeEphemeral {
  channel: string;
  user: string;
  text: string;
  threadTs?: string;
}

/** Prompts Slack shows in a DM (`assistant.threads.setSuggestedPrompts`), as it took them. */
export interface FakeSuggestedPrompts {
  channel: string;
  /** The assistant thread (legacy assistant experience); absent for an agent app's DM. */
  threadTs?: string;
  title?: string;
  prompts: { title: string; message: string }[];
}

/** A thread status (`assistant.threads.setStatus`). */
export interface FakeStatus {
  channel: string;
  threadTs: string;
  status: string;
  at: number;
}

/**
 * The state of the fake workspace: messages, reactions, users, ephemerals, statuses and the call log.
 * Emits `change` after every mutation so tests can wait for an outcome instead of sleeping.
 */
export class FakeSlackStore extends EventEmitter {
  readonly messages = new Map<string, FakeMessage>();
  readonly calls: ApiCall[] = [];
  readonly ephemerals: FakeEphemeral[] = [];
  readonly statuses: FakeStatus[] = [];
  /** Suggested prompts Slack took, oldest first (calls it ignored are not here). */
  readonly suggestedPrompts: FakeSuggestedPrompts[] = [];
  /** Agent sessions by `channel:thread_ts`. */
  readonly sessions = new Map<string, FakeSession>();
  readonly users = new Map<string, string>();
  private lastTs = 0;

  /** The `conversations.replies` pages served: the `limit` applied and how many messages came back. */
  readonly historyPages: { channel: string; threadTs: string; limit: number; returned: number }[] = [];

  constructor() {
    super();
    this.setMaxListeners(0);
  }

  /** A new, strictly increasing message ts (`1700000000.000100`). */
  nextTs(): string {
    const micros = Math.max(Date.now() * 1000, this.lastTs + 1);
    this.lastTs = micros;
    return `${Math.floor(micros / 1e6)}.${String(micros % 1e6).padStart(6, "0")}`;
  }

  add(message: Omit<FakeMessage, "reactions" | "streaming" | "streamed" | "edits" | "history" | "deleted">) {
    const stored: FakeMessage = {
      ...message,
      reactions: new Map(),
      streaming: false,
      streamed: false,
      edits: 0,
      history: [message.text],
      deleted: false,
    };
    this.messages.set(key(message.channel, message.ts), stored);
    if (message.threadTs !== undefined && message.threadTs !== message.ts) {
      const root = this.get(message.channel, message.threadTs);
      if (root && root.threadTs === undefined) root.threadTs = root.ts;
    }
    this.changed();
    return stored;
  }

  /** The agent session of a thread, if one was created. */
  session(channel: string, threadTs: string): FakeSession | undefined {
    return this.sessions.get(key(channel, threadTs));
  }

  get(channel: string, ts: string): FakeMessage | undefined {
    return this.messages.get(key(channel, ts));
  }

  /** The thread's messages (root first), deleted ones excluded. */
  thread(channel: string, threadTs: string): FakeMessage[] {
    return [...this.messages.values()]
      .filter((m) => m.channel === channel && !m.deleted && (m.ts === threadTs || m.threadTs === threadTs))
      .sort((a, b) => (a.ts < b.ts ? -1 : 1));
  }

  /** The bot's messages in a thread, oldest first. */
  botMessages(channel: string, threadTs: string, botUserId: string): FakeMessage[] {
    return this.thread(channel, threadTs).filter((m) => m.user === botUserId);
  }

  /** Reaction names `user` has on a message. */
  reactionsBy(message: FakeMessage, user: string): string[] {
    return [...message.reactions].filter(([, users]) => users.has(user)).map(([name]) => name);
  }

  record(call: Omit<ApiCall, "hrAt">): void {
    this.calls.push({ ...call, hrAt: performance.now() });
    this.changed();
  }

  changed(): void {
    this.emit("change");
  }

  /**
   * Resolves with the predicate's first truthy value, re-checked after every change (and every 50 ms).
   * Rejects after `timeoutMs` naming `what`.
   */
  waitFor<T>(what: string, predicate: () => T | undefined | false, timeoutMs = 15_000): Promise<T> {
    return new Promise((resolve, reject) => {
      const check = () => {
        let value: T | undefined | false;
        try {
          value = predicate();
        } catch {
          value = undefined;
        }
        if (value !== undefined && value !== false) {
          done();
          resolve(value);
        }
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`fake Slack: timed out waiting for ${what}`));
      }, timeoutMs);
      const poll = setInterval(check, 50);
      const done = () => {
        clearTimeout(timer);
        clearInterval(poll);
        this.off("change", check);
      };
      this.on("change", check);
      check();
    });
  }
}

function key(channel: string, ts: string): string {
  return `${channel}:${ts}`;
}
