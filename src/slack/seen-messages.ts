import type { Cluster, Redis } from "ioredis";
import { type ThreadRef, threadId } from "../chat/index.js";
import type { SlackMessageEvent } from "./events.js";

/** A thread's message as the gateway saw it (the fields history needs). */
export type SeenMessage = Pick<SlackMessageEvent, "ts" | "user" | "bot_id" | "subtype" | "text">;

/** What the gateway knows of one thread. */
export interface SeenThread {
  /**
   * The thread's messages, oldest first, edits applied and deletions removed: at most the store's bound
   * (the most recent ones).
   */
  messages: SeenMessage[];
  /**
   * The gateway saw the thread from its first message on (its root), or `conversations.replies` was read to
   * the end: `messages` is the whole recent thread and Slack need not be asked.
   */
  complete: boolean;
  /** The bot has posted in the thread (its transcript holds the conversation). */
  tookPart: boolean;
  /** Where a `conversations.replies` read that ran out of budget stopped (to go on from there). */
  cursor?: string;
}

/**
 * The recent messages of each thread that the gateway received as events, shared by every gateway
 * instance (Redis), so that a mention's history is built from what was already delivered instead of
 * asking Slack's heavily limited `conversations.replies` again. Writes and reads are best effort: a store
 * that cannot be reached only means the history comes from Slack (or is missing).
 */
export interface SeenMessages {
  /** Records a new message (`thread.thread === message.ts` for a root), an edit or a deletion. */
  record(
    thread: ThreadRef,
    op: "message" | "edited" | "deleted",
    message: SeenMessage,
    by: { self: boolean },
  ): Promise<void>;
  /** Adds messages read from `conversations.replies`; `cursor` is where to go on (absent: read to the end). */
  addFetched(thread: ThreadRef, messages: SeenMessage[], cursor: string | undefined): Promise<void>;
  read(thread: ThreadRef): Promise<SeenThread>;
  /** The thread ts of message `ts` (recorded with the message), if it was seen. */
  threadOf(team: string, channel: string, ts: string): Promise<string | undefined>;
}

/** Bounds of a {@link redisSeenMessages} store. */
export interface SeenMessagesLimits {
  /** Entries kept per thread (messages, edits and deletions; the oldest go first). Default 60. */
  maxEntries: number;
  /** Characters kept of one message's text. Default 4,000. */
  maxTextChars: number;
  /** How long a thread is remembered after its last event, ms. Default 3 days. */
  ttlMs: number;
}

export const DEFAULT_SEEN_LIMITS: SeenMessagesLimits = {
  maxEntries: 60,
  maxTextChars: 4000,
  ttlMs: 3 * 24 * 60 * 60 * 1000,
};

type Entry = { op: "m" | "e" | "d" | "f"; m: SeenMessage };

const OPS = { message: "m", edited: "e", deleted: "d" } as const;

/** The fields of a message the store keeps, its text cut at `maxChars`. */
function trimmed(message: SeenMessage, maxChars = Number.POSITIVE_INFINITY): SeenMessage {
  const kept: SeenMessage = {};
  if (message.ts !== undefined) kept.ts = message.ts;
  if (message.user !== undefined) kept.user = message.user;
  if (message.bot_id !== undefined) kept.bot_id = message.bot_id;
  if (message.subtype !== undefined) kept.subtype = message.subtype;
  if (message.text !== undefined) kept.text = message.text.slice(0, maxChars);
  return kept;
}

/** Folds entries in arrival order: the latest text of each ts wins, a deletion removes it; sorted by ts. */
export function foldEntries(entries: Entry[]): SeenMessage[] {
  const byTs = new Map<string, SeenMessage>();
  for (const { op, m } of entries) {
    if (m.ts === undefined) continue;
    if (op === "d") byTs.delete(m.ts);
    else if (op === "e") {
      const earlier = byTs.get(m.ts);
      byTs.set(m.ts, earlier ? { ...earlier, text: m.text ?? "" } : m);
    } else if (op === "m" || !byTs.has(m.ts)) byTs.set(m.ts, m);
  }
  return [...byTs.values()].sort((a, b) => compareTs(a.ts!, b.ts!));
}

/** Slack ts order (`"1700000000.000100"`): numeric seconds, then the fraction. */
export function compareTs(a: string, b: string): number {
  const [as = "0", af = ""] = a.split(".");
  const [bs = "0", bf = ""] = b.split(".");
  if (as.length !== bs.length) return as.length - bs.length;
  if (as !== bs) return as < bs ? -1 : 1;
  const fa = af.padEnd(6, "0");
  const fb = bf.padEnd(6, "0");
  return fa === fb ? 0 : fa < fb ? -1 : 1;
}

/**
 * Where a {@link redisSeenMessages} store keeps its data (the app passes `slackKeys` of `src/runs`). The
 * three keys of one thread must share a hash tag (one MULTI on Redis Cluster).
 */
export interface SeenMessagesKeys {
  /** A thread's lists of seen and fetched entries and its meta hash. */
  seen: (thread: ThreadRef) => { list: string; fetched: string; meta: string };
  /** String: the thread ts of one seen message. */
  seenMessage: (team: string, channel: string, ts: string) => string;
}

/**
 * A {@link SeenMessages} in Redis under the keys `keys` builds: per thread a list `list` of JSON entries
 * (RPUSH + LTRIM to `maxEntries`: O(1) per event), a list `fetched` of what `conversations.replies`
 * returned (kept apart, so a long fetched page never pushes out what was seen), and a hash `meta`
 * (`root`, `self`, `fetched`, `cursor`), each with a TTL renewed on every write; per message the thread
 * it is in (`seenMessage`).
 */
export function redisSeenMessages(
  redis: Redis | Cluster,
  keys: SeenMessagesKeys,
  limits: Partial<SeenMessagesLimits> = {},
): SeenMessages {
  const bounds = { ...DEFAULT_SEEN_LIMITS, ...limits };
  const push = async (
    thread: ThreadRef,
    into: "list" | "fetched",
    entries: Entry[],
    meta: Record<string, string>,
    drop: string[],
  ) => {
    const { meta: metaKey, ...lists } = keys.seen(thread);
    const list = lists[into];
    const tx = redis.multi();
    if (entries.length > 0) {
      tx.rpush(list, ...entries.map((entry) => JSON.stringify(entry)));
      tx.ltrim(list, -bounds.maxEntries, -1);
      tx.pexpire(list, bounds.ttlMs);
    }
    if (Object.keys(meta).length > 0) tx.hset(metaKey, meta);
    if (drop.length > 0) tx.hdel(metaKey, ...drop);
    tx.pexpire(metaKey, bounds.ttlMs);
    const results = await tx.exec();
    const failed = results?.find(([err]) => err !== null)?.[0];
    if (failed) throw failed;
  };
  return {
    async record(thread, op, message, by) {
      const meta: Record<string, string> = { seen: "1" };
      if (op === "message" && message.ts === thread.thread) meta.root = "1";
      if (by.self) meta.self = "1";
      if (op === "message" && message.ts !== undefined) {
        // Which thread a reacted-to message is in, for every gateway instance (a single-key write).
        void redis
          .set(
            keys.seenMessage(thread.workspace, thread.channel, message.ts),
            thread.thread,
            "PX",
            bounds.ttlMs,
          )
          .catch(() => undefined);
      }
      await push(thread, "list", [{ op: OPS[op], m: trimmed(message, bounds.maxTextChars) }], meta, []);
    },
    async addFetched(thread, messages, cursor) {
      const entries = messages.map((m): Entry => ({ op: "f", m: trimmed(m, bounds.maxTextChars) }));
      const meta: Record<string, string> = cursor === undefined ? { fetched: "1" } : { cursor };
      await push(thread, "fetched", entries, meta, cursor === undefined ? ["cursor"] : []);
    },
    async read(thread) {
      const { list, fetched, meta } = keys.seen(thread);
      const [older, raw, fields] = await Promise.all([
        redis.lrange(fetched, 0, -1),
        redis.lrange(list, 0, -1),
        redis.hgetall(meta),
      ]);
      // Fetched messages first: what the gateway saw of a message (an edit, a deletion) wins over Slack's copy.
      const entries = [...older, ...raw].flatMap((line): Entry[] => {
        try {
          return [JSON.parse(line) as Entry];
        } catch {
          return [];
        }
      });
      const seen: SeenThread = {
        messages: foldEntries(entries),
        complete: fields.root === "1" || fields.fetched === "1",
        tookPart: fields.self === "1",
      };
      if (fields.cursor) seen.cursor = fields.cursor;
      return seen;
    },
    async threadOf(team, channel, ts) {
      return (await redis.get(keys.seenMessage(team, channel, ts))) ?? undefined;
    },
  };
}

/** A {@link SeenMessages} in this process only (a single gateway, tests). Unbounded by time. */
export function memorySeenMessages(maxEntries = DEFAULT_SEEN_LIMITS.maxEntries): SeenMessages {
  const messageThreads = new Map<string, string>();
  const threads = new Map<string, { entries: Entry[]; fetched: Entry[]; meta: Record<string, string> }>();
  const of = (thread: ThreadRef) => {
    const id = threadId(thread);
    let state = threads.get(id);
    if (!state) {
      state = { entries: [], fetched: [], meta: {} };
      threads.set(id, state);
    }
    return state;
  };
  const add = (thread: ThreadRef, into: "entries" | "fetched", entries: Entry[]) => {
    const state = of(thread);
    const list = state[into];
    list.push(...entries);
    list.splice(0, Math.max(0, list.length - maxEntries));
    return state;
  };
  return {
    async record(thread, op, message, by) {
      const state = add(thread, "entries", [{ op: OPS[op], m: trimmed(message) }]);
      if (op === "message" && message.ts === thread.thread) state.meta.root = "1";
      if (by.self) state.meta.self = "1";
      if (op === "message" && message.ts !== undefined) {
        messageThreads.set(`${thread.workspace}:${thread.channel}:${message.ts}`, thread.thread);
      }
    },
    async addFetched(thread, messages, cursor) {
      const state = add(
        thread,
        "fetched",
        messages.map((m): Entry => ({ op: "f", m: trimmed(m) })),
      );
      if (cursor === undefined) {
        state.meta.fetched = "1";
        delete state.meta.cursor;
      } else state.meta.cursor = cursor;
    },
    async read(thread) {
      const state = of(thread);
      const seen: SeenThread = {
        messages: foldEntries([...state.fetched, ...state.entries]),
        complete: state.meta.root === "1" || state.meta.fetched === "1",
        tookPart: state.meta.self === "1",
      };
      if (state.meta.cursor) seen.cursor = state.meta.cursor;
      return seen;
    },
    async threadOf(team, channel, ts) {
      return messageThreads.get(`${team}:${channel}:${ts}`);
    },
  };
}
