import type { Cluster, Redis } from "ioredis";
import type { ApprovalCard, ChatUser } from "../chat/index.js";
import type { PlaygroundKeys } from "./keys.js";

import type {
  PlaygroundEvent,
  PlaygroundMessage,
  PlaygroundMessageKind,
  PlaygroundReaction,
  PlaygroundSnapshot,
  PlaygroundThread,
} from "./types.js";

/** Why a store operation was refused, shaped like the platforms' API errors. */
export type PlaygroundErrorCode =
  | "message_not_found"
  | "cant_update_message"
  | "not_author"
  | "thread_not_found"
  /** Nothing is left once the mention of the bot is taken out. */
  | "empty_message";

/** A refused store operation, with the operation and thread it concerned. */
export class PlaygroundError extends Error {
  constructor(
    readonly operation: string,
    readonly code: PlaygroundErrorCode,
    readonly thread: string,
  ) {
    super(`playground ${operation} failed in thread ${thread}: ${code}`);
    this.name = "PlaygroundError";
  }
}

/** Options of {@link PlaygroundStore}. */
export interface PlaygroundStoreOptions {
  /** Its Redis keys: `playgroundKeys(THREADLINE_PREFIX)` from `src/runs/keys.ts`, handed over by the app. */
  keys: PlaygroundKeys;
  /** How long a thread lives after its last message. Default 30 days. */
  retentionMs?: number;
}

/** A message to add; the store fills in reactions. */
export type NewPlaygroundMessage = Omit<PlaygroundMessage, "reactions" | "editedAt">;

/** Which messages a change may touch. */
export interface ChangeGuard {
  /** Kinds the message must have. */
  kinds: readonly PlaygroundMessageKind[];
  /** When set, only the author may change the message. */
  authorId?: string;
}

const DEFAULT_RETENTION_MS = 30 * 24 * 60 * 60 * 1000;

/**
 * change: KEYS messages; ARGV id, kinds (",user,bot,"), authorId or "", channel, event, then field/value
 * pairs whose fields are suffixed with ":<id>". → "ok" | "message_not_found" | "cant_update_message" | "not_author"
 */
const CHANGE = `
local id = ARGV[1]
local kind = redis.call('HGET', KEYS[1], 'k:' .. id)
if not kind or redis.call('HEXISTS', KEYS[1], 'd:' .. id) == 1 then return 'message_not_found' end
if not string.find(ARGV[2], ',' .. kind .. ',', 1, true) then return 'cant_update_message' end
if ARGV[3] ~= '' and redis.call('HGET', KEYS[1], 'a:' .. id) ~= ARGV[3] then return 'not_author' end
for i = 6, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i] .. ':' .. id, ARGV[i + 1]) end
redis.call('PUBLISH', ARGV[4], ARGV[5])
return 'ok'
`;

/** react: KEYS reactions; ARGV field, userJson, added (1/0), channel, event, retentionMs → 1 when changed. */
const REACT = `
local changed
if ARGV[3] == '1' then
  changed = redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2])
  redis.call('PEXPIRE', KEYS[1], ARGV[6])
else
  changed = redis.call('HDEL', KEYS[1], ARGV[1])
end
if changed == 1 then redis.call('PUBLISH', ARGV[4], ARGV[5]) end
return changed
`;

type ScriptCommands = {
  playgroundChange(...args: string[]): Promise<string>;
  playgroundReact(...args: string[]): Promise<number>;
};

/** A connection to one Redis or to a Redis Cluster (ioredis `Redis` or `Cluster`). */
type RedisClient = Redis | Cluster;

const scripted = new WeakSet<RedisClient>();

function withScripts(redis: RedisClient): RedisClient & ScriptCommands {
  if (!scripted.has(redis)) {
    redis.defineCommand("playgroundChange", { numberOfKeys: 1, lua: CHANGE });
    redis.defineCommand("playgroundReact", { numberOfKeys: 1, lua: REACT });
    scripted.add(redis);
  }
  return redis as RedisClient & ScriptCommands;
}

/**
 * The playground's chat state in Redis, shared by the gateway (which serves the browser) and the workers
 * (which post through {@link PlaygroundOutbound}). Every change is applied and published on one channel
 * in the same round trip (a transaction or a script), so subscribers see changes in the order Redis
 * applied them. A streamed edit costs one script call that writes one hash field.
 */
export class PlaygroundStore {
  readonly keys: PlaygroundKeys;
  private readonly redis: RedisClient & ScriptCommands;
  private readonly retentionMs: number;

  constructor(redis: RedisClient, options: PlaygroundStoreOptions) {
    this.redis = withScripts(redis);
    this.keys = options.keys;
    this.retentionMs = options.retentionMs ?? DEFAULT_RETENTION_MS;
  }

  /** True when the thread exists. */
  async hasThread(threadId: string): Promise<boolean> {
    return (await this.redis.exists(this.keys.thread(threadId).meta)) === 1;
  }

  /**
   * Appends a message to a thread and announces it, in one transaction. With `thread`, the message is the
   * thread's first: the thread is created (idempotent for the same id) and announced in the same
   * transaction, so no thread exists without its first message.
   */
  async addMessage(
    threadId: string,
    message: NewPlaygroundMessage,
    options: { thread?: PlaygroundThread } = {},
  ): Promise<void> {
    const keys = this.keys.thread(threadId);
    const head: Record<string, unknown> = { author: message.author, sentAt: message.sentAt };
    if (message.mentionsBot) head.mentionsBot = true;
    const fields: Record<string, string> = {
      [`k:${message.id}`]: message.kind,
      [`h:${message.id}`]: JSON.stringify(head),
      [`a:${message.id}`]: message.author.id,
      [`t:${message.id}`]: message.text,
    };
    if (message.card) fields[`c:${message.id}`] = JSON.stringify(message.card);
    const event: PlaygroundEvent = {
      type: "message",
      thread: threadId,
      message: { ...message, reactions: [] },
    };
    const transaction = this.redis.multi();
    const { thread } = options;
    if (thread) {
      const created: PlaygroundEvent = { type: "thread", thread };
      transaction
        .hset(keys.meta, {
          title: thread.title,
          createdAt: String(thread.createdAt),
          createdBy: JSON.stringify(thread.createdBy),
        })
        .publish(this.keys.events, JSON.stringify(created));
    }
    transaction.hset(keys.messages, fields).rpush(keys.order, message.id);
    for (const key of [keys.messages, keys.order, keys.meta]) transaction.pexpire(key, this.retentionMs);
    // The thread index lives in another Cluster slot, so it is not in the transaction; both are sent at once.
    await Promise.all([
      transaction.publish(this.keys.events, JSON.stringify(event)).exec(),
      this.redis.zadd(this.keys.threads, Math.max(message.sentAt, thread?.lastActivity ?? 0), threadId),
    ]);
  }

  /** Replaces a message's text. @throws PlaygroundError when the guard refuses or the message is gone. */
  async editText(threadId: string, id: string, text: string, guard: ChangeGuard): Promise<void> {
    const editedAt = Date.now();
    const event: PlaygroundEvent = { type: "text", thread: threadId, id, text, editedAt };
    await this.change("edit", threadId, id, guard, event, ["t", text, "e", String(editedAt)]);
  }

  /** Replaces an approval card (and its text). @throws PlaygroundError as {@link PlaygroundStore.editText}. */
  async editCard(threadId: string, id: string, card: ApprovalCard, text: string): Promise<void> {
    const editedAt = Date.now();
    const event: PlaygroundEvent = { type: "card", thread: threadId, id, text, card, editedAt };
    await this.change("updateApproval", threadId, id, { kinds: ["approval"] }, event, [
      "c",
      JSON.stringify(card),
      "t",
      text,
      "e",
      String(editedAt),
    ]);
  }

  /** Hides a message. @throws PlaygroundError as {@link PlaygroundStore.editText}. */
  async deleteMessage(threadId: string, id: string, guard: ChangeGuard): Promise<void> {
    const event: PlaygroundEvent = { type: "deleted", thread: threadId, id };
    await this.change("delete", threadId, id, guard, event, ["d", "1"]);
  }

  /**
   * Adds or removes `user`'s reaction; announces it only when something changed (adding twice or
   * removing what is not there is a no-op). Returns whether it changed.
   */
  async setReaction(
    threadId: string,
    id: string,
    emoji: string,
    user: ChatUser,
    added: boolean,
  ): Promise<boolean> {
    const keys = this.keys.thread(threadId);
    const event: PlaygroundEvent = { type: "reaction", thread: threadId, id, emoji, user, added };
    const changed = await this.redis.playgroundReact(
      keys.reactions,
      JSON.stringify([id, emoji, user.id]),
      JSON.stringify({ user, at: Date.now() }),
      added ? "1" : "0",
      this.keys.events,
      JSON.stringify(event),
      String(this.retentionMs),
    );
    return changed === 1;
  }

  /** Sets (or with `null` clears) the bot's status line of a thread. */
  async setStatus(threadId: string, status: string | null): Promise<void> {
    const keys = this.keys.thread(threadId);
    const event: PlaygroundEvent = { type: "status", thread: threadId, status };
    const transaction = this.redis.multi();
    if (status === null) transaction.hdel(keys.meta, "status");
    else transaction.hset(keys.meta, "status", status);
    await transaction.publish(this.keys.events, JSON.stringify(event)).exec();
  }

  /** Publishes a notice only `userId`'s browser shows; nothing is stored. */
  async notify(threadId: string, userId: string, text: string): Promise<void> {
    const event: PlaygroundEvent = { type: "notice", thread: threadId, userId, text };
    await this.redis.publish(this.keys.events, JSON.stringify(event));
  }

  /** Threads by last activity, newest first; forgets threads older than the retention. */
  async listThreads(limit = 100): Promise<PlaygroundThread[]> {
    await this.redis.zremrangebyscore(this.keys.threads, "-inf", Date.now() - this.retentionMs);
    const flat = await this.redis.zrevrange(this.keys.threads, 0, limit - 1, "WITHSCORES");
    const ids: { id: string; lastActivity: number }[] = [];
    for (let i = 0; i + 1 < flat.length; i += 2)
      ids.push({ id: flat[i]!, lastActivity: Number(flat[i + 1]) });
    // One command per thread, not a pipeline: on a Redis Cluster the threads' keys live on different nodes,
    // and an ioredis pipeline must stay on one. Sent together, they still cost about one round trip.
    const metas = await Promise.all(
      ids.map(({ id }) =>
        this.redis
          .hgetall(this.keys.thread(id).meta)
          .catch((): Record<string, string> | undefined => undefined),
      ),
    );
    const threads: PlaygroundThread[] = [];
    ids.forEach(({ id, lastActivity }, index) => {
      const thread = threadFromMeta(id, metas[index], lastActivity);
      if (thread) threads.push(thread);
    });
    return threads;
  }

  /** A thread with its visible messages, or `undefined` when it does not exist. */
  async snapshot(threadId: string): Promise<PlaygroundSnapshot | undefined> {
    const keys = this.keys.thread(threadId);
    const [meta, fields, order, reactions, score] = await Promise.all([
      this.redis.hgetall(keys.meta),
      this.redis.hgetall(keys.messages),
      this.redis.lrange(keys.order, 0, -1),
      this.redis.hgetall(keys.reactions),
      this.redis.zscore(this.keys.threads, threadId),
    ]);
    const thread = threadFromMeta(threadId, meta, Number(score ?? meta.createdAt ?? 0));
    if (!thread) return undefined;
    const byMessage = groupReactions(reactions);
    const messages: PlaygroundMessage[] = [];
    for (const id of order) {
      const message = messageFromFields(id, fields, byMessage.get(id) ?? []);
      if (message) messages.push(message);
    }
    return { thread, messages, status: meta.status ?? null };
  }

  private async change(
    operation: string,
    threadId: string,
    id: string,
    guard: ChangeGuard,
    event: PlaygroundEvent,
    fieldValues: string[],
  ): Promise<void> {
    const result = await this.redis.playgroundChange(
      this.keys.thread(threadId).messages,
      id,
      `,${guard.kinds.join(",")},`,
      guard.authorId ?? "",
      this.keys.events,
      JSON.stringify(event),
      ...fieldValues,
    );
    if (result !== "ok") throw new PlaygroundError(operation, result as PlaygroundErrorCode, threadId);
  }
}

function threadFromMeta(
  id: string,
  meta: Record<string, string> | undefined,
  lastActivity: number,
): PlaygroundThread | undefined {
  if (!meta || meta.title === undefined || meta.createdBy === undefined) return undefined;
  return {
    id,
    title: meta.title,
    createdAt: Number(meta.createdAt),
    createdBy: JSON.parse(meta.createdBy) as ChatUser,
    lastActivity,
  };
}

function messageFromFields(
  id: string,
  fields: Record<string, string>,
  reactions: PlaygroundReaction[],
): PlaygroundMessage | undefined {
  const kind = fields[`k:${id}`] as PlaygroundMessageKind | undefined;
  const head = fields[`h:${id}`];
  if (kind === undefined || head === undefined || fields[`d:${id}`] !== undefined) return undefined;
  const { author, sentAt, mentionsBot } = JSON.parse(head) as {
    author: ChatUser;
    sentAt: number;
    mentionsBot?: boolean;
  };
  const message: PlaygroundMessage = { id, kind, author, text: fields[`t:${id}`] ?? "", sentAt, reactions };
  const editedAt = fields[`e:${id}`];
  if (editedAt !== undefined) message.editedAt = Number(editedAt);
  if (mentionsBot) message.mentionsBot = true;
  const card = fields[`c:${id}`];
  if (card !== undefined) message.card = JSON.parse(card) as ApprovalCard;
  return message;
}

/** Reactions per message: emoji and their users in the order they were added. */
function groupReactions(fields: Record<string, string>): Map<string, PlaygroundReaction[]> {
  const entries = Object.entries(fields).map(([field, value]) => {
    const [messageId, emoji] = JSON.parse(field) as [string, string, string];
    const { user, at } = JSON.parse(value) as { user: ChatUser; at: number };
    return { messageId, emoji, user, at };
  });
  entries.sort((a, b) => a.at - b.at);
  const out = new Map<string, PlaygroundReaction[]>();
  for (const { messageId, emoji, user } of entries) {
    let list = out.get(messageId);
    if (!list) {
      list = [];
      out.set(messageId, list);
    }
    let reaction = list.find((entry) => entry.emoji === emoji);
    if (!reaction) {
      reaction = { emoji, users: [] };
      list.push(reaction);
    }
    reaction.users.push(user);
  }
  return out;
}
