import type { Redis } from "ioredis";
import type { ThreadRef } from "../chat/index.js";

/**
 * Who a thread's streamed replies are for. Slack's `chat.startStream` needs the recipient user outside
 * DMs; the gateway records the latest author who addressed the bot, the workers read it when they start a
 * stream. Reads and writes are best effort: a missing recipient only means the reply is posted and
 * edited instead of streamed.
 */
export interface RecipientStore {
  set(thread: ThreadRef, userId: string): Promise<void>;
  get(thread: ThreadRef): Promise<string | undefined>;
}

/** How long a recipient is remembered after the last message (7 days). */
const RECIPIENT_TTL_SECONDS = 7 * 24 * 60 * 60;

/** A {@link RecipientStore} in Redis under `<prefix>:slack-recipient:<team>:<channel>:<thread>`. */
export function redisRecipientStore(redis: Redis, prefix: string): RecipientStore {
  const key = (thread: ThreadRef) =>
    `${prefix}:slack-recipient:${thread.workspace}:${thread.channel}:${thread.thread}`;
  return {
    async set(thread, userId) {
      await redis.set(key(thread), userId, "EX", RECIPIENT_TTL_SECONDS);
    },
    async get(thread) {
      return (await redis.get(key(thread))) ?? undefined;
    },
  };
}

/** A {@link RecipientStore} in this process only (single-process setups and tests). */
export function memoryRecipientStore(): RecipientStore {
  const map = new Map<string, string>();
  const key = (thread: ThreadRef) => `${thread.workspace}:${thread.channel}:${thread.thread}`;
  return {
    async set(thread, userId) {
      map.set(key(thread), userId);
    },
    async get(thread) {
      return map.get(key(thread));
    },
  };
}
