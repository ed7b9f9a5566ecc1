import type { Redis } from "ioredis";
import type { AgentMessage } from "../agent/index.js";
import type { ChatUser } from "../chat/index.js";
import { threadKeys } from "./keys.js";

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
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  /** The whole transcript, oldest first. Entries that fail to parse are skipped (never crash a run). */
  async loadTranscript(threadId: string): Promise<AgentMessage[]> {
    return parseTranscript(await this.redis.lrange(threadKeys(this.prefix, threadId).transcript, 0, -1));
  }

  async meta(threadId: string): Promise<ThreadMeta> {
    return parseMeta(await this.redis.hgetall(threadKeys(this.prefix, threadId).meta));
  }

  /** Tool names always allowed in the thread ("Always allow" clicks). */
  async allowedTools(threadId: string): Promise<Set<string>> {
    return new Set(await this.redis.smembers(threadKeys(this.prefix, threadId).allow));
  }

  /** Results of tool calls that finished during the active run (for crash recovery). */
  async finishedToolCalls(threadId: string): Promise<Map<string, { result: unknown; isError: boolean }>> {
    const raw = await this.redis.hgetall(threadKeys(this.prefix, threadId).toolResults);
    const out = new Map<string, { result: unknown; isError: boolean }>();
    for (const [id, json] of Object.entries(raw)) {
      try {
        out.set(id, JSON.parse(json) as { result: unknown; isError: boolean });
      } catch {
        // Unknown outcome: reported as interrupted.
      }
    }
    return out;
  }

  /**
   * Messages waiting in the inboxes of `threadIds` (queued for their runs, not yet drained), summed; a
   * thread listed twice counts once. One pipeline of single-key LLENs: no multi-key script, no KEYS or
   * SCAN over the keyspace. Read-only. @throws when Redis does not answer.
   */
  async inboxDepth(threadIds: readonly string[]): Promise<number> {
    const unique = [...new Set(threadIds)];
    if (unique.length === 0) return 0;
    const pipeline = this.redis.pipeline();
    for (const threadId of unique) pipeline.llen(threadKeys(this.prefix, threadId).inbox);
    let total = 0;
    for (const [err, length] of (await pipeline.exec()) ?? []) {
      if (err) throw err;
      total += Number(length);
    }
    return total;
  }

  /** Deletes everything stored for a thread (tests and admin). */
  async deleteThread(threadId: string): Promise<void> {
    const keys = threadKeys(this.prefix, threadId);
    const names = Object.values(keys).filter((value): value is string => typeof value === "string");
    await this.redis.del(...names);
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
  };
}
