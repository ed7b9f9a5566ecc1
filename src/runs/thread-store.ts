import type { AgentMessage } from "../agent/index.js";
import type { ChatUser } from "../chat/index.js";
import {
  asContextSummary,
  CONTEXT_SUMMARY_ROLE,
  messageFingerprint,
  rememberMessageTokens,
} from "../llm/index.js";
import { threadKeys } from "./keys.js";
import type { RedisClient } from "./redis-client.js";
import { readThreadSettings, type ThreadSettings } from "./thread-settings.js";

/** The allow-set entry of a tool allowed for one requester in a thread. */
export function allowedForUser(userId: string, tool: string): string {
  return `user:${userId}:${tool}`;
}

/** The allow-set entry of a tool allowed for everyone in a thread. */
export function allowedForThread(tool: string): string {
  return `thread:${tool}`;
}

/** What Threadline remembers about a thread besides its transcript. */
export interface ThreadMeta {
  engaged: boolean;
  startedBy: ChatUser | undefined;
  createdAt: number | undefined;
  lastActivity: number | undefined;
  /** Author of the message that started the latest run. */
  requester: ChatUser | undefined;
  /** The active (or last started) run id; empty when idle. */
  run: string;
  /** Who asked the active run to stop, if anyone. */
  stopBy: ChatUser | undefined;
  /** The settings someone set in the thread with a command (thread-settings.ts). */
  settings: ThreadSettings;
}

/** A stored user (JSON); `undefined` when absent or unreadable, never a throw. */
export function parseUser(json: string | undefined): ChatUser | undefined {
  if (!json) return undefined;
  try {
    return JSON.parse(json) as ChatUser;
  } catch {
    return undefined;
  }
}

/** Read access to a thread's persisted state. Writes happen through the fenced scripts. */
export class ThreadStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {}

  /** The whole transcript, oldest first. Entries that fail to parse are skipped (never crash a run). */
  async loadTranscript(threadId: string): Promise<AgentMessage[]> {
    return parseTranscript(await this.redis.lrange(threadKeys(this.prefix, threadId).transcript, 0, -1));
  }

  /** Transcript entries (JSON, as stored) at positions `from` (inclusive) to `to` (exclusive). */
  async transcriptRange(threadId: string, from: number, to: number): Promise<string[]> {
    if (to <= from) return [];
    return this.redis.lrange(threadKeys(this.prefix, threadId).transcript, from, to - 1);
  }

  async meta(threadId: string): Promise<ThreadMeta> {
    return parseMeta(await this.redis.hgetall(threadKeys(this.prefix, threadId).meta));
  }

  /**
   * True when the thread always allows `tool` for `userId` (an "Always allow" click on one of their runs'
   * cards) or for everyone (an approver's "for everyone" click).
   */
  async isToolAllowed(threadId: string, userId: string, tool: string): Promise<boolean> {
    const [forUser, forThread] = await this.redis.smismember(
      threadKeys(this.prefix, threadId).allow,
      allowedForUser(userId, tool),
      allowedForThread(tool),
    );
    return forUser === 1 || forThread === 1;
  }

  /** The state of a message: queued | inflight | delivered | withdrawn | refused | notprocessed | command. */
  async messageState(threadId: string, messageId: string): Promise<string | undefined> {
    return (await this.redis.hget(threadKeys(this.prefix, threadId).state, messageId)) ?? undefined;
  }

  /** The platform user id of a queued (or delivered) message's author, if known. */
  async messageAuthor(threadId: string, messageId: string): Promise<string | undefined> {
    const body = await this.redis.hget(threadKeys(this.prefix, threadId).body, messageId);
    if (!body) return undefined;
    try {
      return (JSON.parse(body) as { authorId?: string }).authorId;
    } catch {
      return undefined;
    }
  }

  /** The author of the message that started the thread's latest run. */
  async requester(threadId: string): Promise<ChatUser | undefined> {
    return parseUser(
      (await this.redis.hget(threadKeys(this.prefix, threadId).meta, "requester")) ?? undefined,
    );
  }

  /** The active run: its id while a claim (or the start marker) holds the lease, else undefined. */
  async activeRun(threadId: string): Promise<string | undefined> {
    const keys = threadKeys(this.prefix, threadId);
    const [leased, run] = await Promise.all([
      this.redis.exists(keys.lease),
      this.redis.hget(keys.meta, "run"),
    ]);
    return leased === 1 && run ? run : undefined;
  }

  /** True when nobody holds the thread's lease while `runId` is still its run (the run lost its lease by lapse). */
  async isOrphaned(threadId: string, runId: string): Promise<boolean> {
    const keys = threadKeys(this.prefix, threadId);
    const [leased, run] = await Promise.all([
      this.redis.exists(keys.lease),
      this.redis.hget(keys.meta, "run"),
    ]);
    return leased === 0 && run === runId;
  }

  /** Who asked the thread's active run to stop, if anyone. */
  async stopBy(threadId: string): Promise<ChatUser | undefined> {
    return parseUser((await this.redis.hget(threadKeys(this.prefix, threadId).meta, "stopBy")) ?? undefined);
  }

  /** The most urgent queued message the running loop yields to (as the heartbeat reports it). */
  async waiting(threadId: string): Promise<{ kind: "interrupt" | "steer" | undefined; by: string }> {
    const keys = threadKeys(this.prefix, threadId);
    const ids = await this.redis.lrange(keys.inbox, 0, -1);
    if (ids.length === 0) return { kind: undefined, by: "" };
    const dispositions = await this.redis.hmget(keys.disposition, ...ids);
    let at = dispositions.indexOf("interrupt");
    if (at < 0) at = dispositions.indexOf("steer");
    if (at < 0) return { kind: undefined, by: "" };
    const body = await this.redis.hget(keys.body, ids[at]!);
    let by = "";
    try {
      const name = (JSON.parse(body ?? "") as { authorName?: unknown }).authorName;
      if (typeof name === "string") by = name;
    } catch {
      // unreadable body: no name
    }
    return { kind: dispositions[at] as "interrupt" | "steer", by };
  }

  /** Messages queued for the thread's active run (not yet drained). */
  async inboxLength(threadId: string): Promise<number> {
    return this.redis.llen(threadKeys(this.prefix, threadId).inbox);
  }

  /** The approval id the active run uses for a call, if it asked already. */
  async approvalIdOf(threadId: string, callKey: string): Promise<string | undefined> {
    return (await this.redis.hget(threadKeys(this.prefix, threadId).approvals, callKey)) ?? undefined;
  }

  /** An approval record as stored (empty when there is none). */
  async approvalRecord(threadId: string, approvalId: string): Promise<Record<string, string>> {
    return this.redis.hgetall(threadKeys(this.prefix, threadId).approval(approvalId));
  }

  /** Remembers which chat message shows an approval's card (so a resumed run updates that card). */
  async setApprovalCard(threadId: string, approvalId: string, cardMessageId: string): Promise<void> {
    await this.redis.hset(
      threadKeys(this.prefix, threadId).approval(approvalId),
      "cardMessageId",
      cardMessageId,
    );
  }

  /**
   * Claims an approval's one reminder: true the first time for a record that exists (a resumed run or a
   * second worker gets false, so the requester is mentioned once), false afterwards.
   */
  async claimApprovalReminder(threadId: string, approvalId: string, now: number): Promise<boolean> {
    const key = threadKeys(this.prefix, threadId).approval(approvalId);
    // HSETNX would create a record that expired meanwhile; only remind for one that still exists.
    if ((await this.redis.exists(key)) === 0) return false;
    return (await this.redis.hsetnx(key, "remindedAt", String(now))) === 1;
  }

  /**
   * Messages waiting in the inboxes of `threadIds` (queued for their runs, not yet drained), summed; a
   * thread listed twice counts once. Single-key LLENs: no multi-key script, no KEYS or SCAN over the
   * keyspace, safe on Redis Cluster. Read-only. @throws when Redis does not answer.
   */
  async inboxDepth(threadIds: readonly string[]): Promise<number> {
    const unique = [...new Set(threadIds)];
    if (unique.length === 0) return 0;
    // Single commands, not one pipeline: on Redis Cluster a pipeline must stay within one node's slots, and
    // these threads live on many (ioredis still sends them back to back).
    const lengths = await Promise.all(
      unique.map((threadId) => this.redis.llen(threadKeys(this.prefix, threadId).inbox)),
    );
    return lengths.reduce((sum, length) => sum + length, 0);
  }
}

/**
 * The field a persisted message's entry carries its token count in (`messageTokens`: o200k, no safety
 * factor). It is taken off when the entry is read: the message is as the run persisted it.
 */
export const STORED_TOKENS_FIELD = "tlTokens";

/** One stored entry as the message it holds, its token count remembered; throws on invalid JSON. */
export function parseEntry(entry: string): AgentMessage {
  const message = JSON.parse(entry) as AgentMessage & { [STORED_TOKENS_FIELD]?: unknown };
  const tokens = message[STORED_TOKENS_FIELD];
  if (tokens !== undefined) {
    delete message[STORED_TOKENS_FIELD];
    if (typeof tokens === "number") rememberMessageTokens(message, tokens);
  }
  return message;
}

/** Transcript entries as stored (JSON per list element); a corrupt entry is dropped rather than blocking the thread forever. */
export function parseTranscript(raw: readonly string[]): AgentMessage[] {
  const messages: AgentMessage[] = [];
  for (const entry of raw) {
    try {
      messages.push(parseEntry(entry));
    } catch {
      // dropped, see above
    }
  }
  return messages;
}

/** A thread's meta hash as stored. */
export function parseMeta(raw: Readonly<Record<string, string | undefined>>): ThreadMeta {
  return {
    engaged: raw.engaged === "1",
    startedBy: parseUser(raw.startedBy),
    createdAt: raw.createdAt ? Number(raw.createdAt) : undefined,
    lastActivity: raw.lastActivity ? Number(raw.lastActivity) : undefined,
    requester: parseUser(raw.requester),
    run: raw.run ?? "",
    stopBy: parseUser(raw.stopBy),
    settings: readThreadSettings(raw),
  };
}

/**
 * A context summary as stored by a run: `covered` counts from the transcript's start, and `firstKeptAt` is
 * the transcript position of the first message it does not cover (absent in summaries stored before it
 * was recorded).
 */
export interface StoredSummaryPosition {
  covered: number;
  firstKept: string;
  firstKeptAt?: number;
}

/**
 * The part of a thread's transcript a run works with, from position `base` on. Context summaries in
 * `messages` count `covered` from `bodyBase` (the non-summary messages before `base`), so the context
 * manager sees the same thing as with the whole transcript: the newest summary that matches, and every
 * message after the ones it covers.
 */
export interface RunTranscript {
  messages: AgentMessage[];
  base: number;
  bodyBase: number;
}

/** Entries a run asks the start script for: about one window of average messages, within bounds. */
export function transcriptTailFor(contextWindow: number | undefined): number {
  return Math.min(8_192, Math.max(256, Math.ceil((contextWindow ?? 0) / 64)));
}

const SUMMARY_MARK = `"role":"${CONTEXT_SUMMARY_ROLE}"`;

/**
 * Parsed transcript entries kept between runs of a worker, validated against the stored JSON. Bounded by
 * the stored characters it holds (default 16 Mi, a few dozen windows' worth; the parsed objects take a few
 * times that in memory).
 */
export class TranscriptCache {
  private readonly threads = new Map<
    string,
    { chars: number; entries: Map<number, { raw: string; message: AgentMessage }> }
  >();
  private chars = 0;

  constructor(private readonly maxChars = 16 * 1024 * 1024) {}

  /**
   * `raw` (the entries from position `from`) parsed: an entry identical to the one cached at its position
   * is the same object as last time (so per-message token counts are reused), others are parsed anew.
   * Unreadable entries are dropped, as {@link parseTranscript} does. Only the latest `raw` of a thread is
   * kept, and the least recently loaded threads are forgotten beyond `maxChars`.
   */
  parse(thread: string, from: number, raw: readonly string[]): AgentMessage[] {
    const known = this.threads.get(thread)?.entries;
    this.forget(thread);
    const next = new Map<number, { raw: string; message: AgentMessage }>();
    const messages: AgentMessage[] = [];
    let chars = 0;
    for (let i = 0; i < raw.length; i++) {
      const entry = raw[i]!;
      const cached = known?.get(from + i);
      let message = cached !== undefined && cached.raw === entry ? cached.message : undefined;
      if (message === undefined) {
        try {
          message = parseEntry(entry);
        } catch {
          continue; // dropped, see parseTranscript
        }
      }
      messages.push(message);
      next.set(from + i, { raw: entry, message });
      chars += entry.length;
    }
    if (chars <= this.maxChars) {
      this.threads.set(thread, { chars, entries: next });
      this.chars += chars;
      for (const [oldest] of this.threads) {
        if (this.chars <= this.maxChars) break;
        this.forget(oldest);
      }
    }
    return messages;
  }

  private forget(thread: string): void {
    const known = this.threads.get(thread);
    if (!known) return;
    this.chars -= known.chars;
    this.threads.delete(thread);
  }
}

/** The worker process's cache (runs of one thread follow each other in the same worker more often than not). */
export const transcriptCache = new TranscriptCache();

/**
 * What a run loads of its transcript, given the start script's tail (`raw`, from position `from`): the
 * messages from the first one the newest stored summary does not cover, reading further back only as far
 * as needed (`store.transcriptRange`); the whole transcript when it holds no summary with a recorded
 * position, or when that summary no longer matches (as the context manager would then ignore it).
 * Read-only. @throws when Redis does not answer.
 */
export async function loadRunTranscript(
  store: Pick<ThreadStore, "transcriptRange">,
  threadId: string,
  raw: readonly string[],
  from: number,
  cache: TranscriptCache = transcriptCache,
): Promise<RunTranscript> {
  let entries = raw.slice();
  let start = from;
  const extend = async (to: number) => {
    if (to >= start) return;
    entries = [...(await store.transcriptRange(threadId, to, start)), ...entries];
    start = to;
  };
  for (;;) {
    const newest = newestSummary(entries);
    if (newest === undefined && start > 0) {
      await extend(Math.max(0, start - Math.max(entries.length, 256)));
      continue;
    }
    const at = newest?.firstKeptAt;
    if (newest === undefined || typeof at !== "number" || !Number.isInteger(at) || at < 0) break;
    if (at < start) {
      // Summaries stored between `at` and `start` are read too: the context manager picks by `covered`.
      await extend(at);
      continue;
    }
    const first = at - start;
    if (first >= entries.length || !fingerprintIs(entries[first]!, newest.firstKept)) break;
    const messages = cache.parse(threadId, at, entries.slice(first));
    return { messages: rebase(messages, newest.covered), base: at, bodyBase: newest.covered };
  }
  await extend(0);
  return { messages: cache.parse(threadId, 0, entries), base: 0, bodyBase: 0 };
}

/** The stored summary with the most `covered` among `entries` (the one the context manager picks). */
function newestSummary(entries: readonly string[]): StoredSummaryPosition | undefined {
  let newest: StoredSummaryPosition | undefined;
  for (const entry of entries) {
    if (!entry.includes(SUMMARY_MARK)) continue;
    let parsed: unknown;
    try {
      parsed = JSON.parse(entry);
    } catch {
      continue;
    }
    const summary = asContextSummary(parsed) as StoredSummaryPosition | undefined;
    if (summary && typeof summary.covered === "number" && (!newest || summary.covered > newest.covered)) {
      newest = summary;
    }
  }
  return newest;
}

function fingerprintIs(entry: string, fingerprint: string): boolean {
  try {
    return messageFingerprint(parseEntry(entry)) === fingerprint;
  } catch {
    return false;
  }
}

/** Copies of the summaries in `messages` with `covered` counted from `bodyBase`; other messages as they are. */
function rebase(messages: AgentMessage[], bodyBase: number): AgentMessage[] {
  if (bodyBase === 0) return messages;
  return messages.map((message) => {
    const summary = asContextSummary(message);
    return summary
      ? ({ ...summary, covered: summary.covered - bodyBase } as unknown as AgentMessage)
      : message;
  });
}
