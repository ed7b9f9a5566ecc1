import type { AgentMessage } from "../agent/index.js";
import type { ChatUser } from "../chat/index.js";
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

/** Transcript entries as stored (JSON per list element); a corrupt entry is dropped rather than blocking the thread forever. */
export function parseTranscript(raw: readonly string[]): AgentMessage[] {
  const messages: AgentMessage[] = [];
  for (const entry of raw) {
    try {
      messages.push(JSON.parse(entry) as AgentMessage);
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
