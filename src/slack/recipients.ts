import type { Cluster, Redis } from "ioredis";
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
  /**
   * Records the thread's agent session title (the request that started it); a title already recorded is
   * kept, as Slack keeps a session's first title.
   */
  setTitle(thread: ThreadRef, title: string): Promise<void>;
  /** The recorded session title, if any. */
  getTitle(thread: ThreadRef): Promise<string | undefined>;
}

/** Longest session title: "max 200 characters" (https://docs.slack.dev/reference/methods/agents.sessions.setStatus). */
export const SESSION_TITLE_MAX = 200;

/**
 * A session title from a request: its first non-empty line, whitespace collapsed, at most
 * {@link SESSION_TITLE_MAX} characters (an ellipsis marks a cut); `fallback` when the text is empty.
 */
export function sessionTitle(text: string, fallback: string): string {
  const line = text
    .split("\n")
    .map((part) => part.replace(/\s+/g, " ").trim())
    .find((part) => part !== "");
  const title = line ?? fallback;
  const chars = [...title];
  return chars.length <= SESSION_TITLE_MAX ? title : `${chars.slice(0, SESSION_TITLE_MAX - 1).join("")}…`;
}

/** How long a recipient is remembered after the last message (7 days). */
const RECIPIENT_TTL_SECONDS = 7 * 24 * 60 * 60;

/** Where a {@link redisRecipientStore} keeps a thread's recipient and session title (one string key each). */
export interface RecipientKeys {
  recipient: (thread: ThreadRef) => string;
  title: (thread: ThreadRef) => string;
}

/** A {@link RecipientStore} in Redis under the keys `keys` builds (the app passes `slackKeys` of `src/runs`). */
export function redisRecipientStore(redis: Redis | Cluster, keys: RecipientKeys): RecipientStore {
  return {
    async set(thread, userId) {
      await redis.set(keys.recipient(thread), userId, "EX", RECIPIENT_TTL_SECONDS);
    },
    async get(thread) {
      return (await redis.get(keys.recipient(thread))) ?? undefined;
    },
    async setTitle(thread, title) {
      await redis.set(keys.title(thread), title, "EX", RECIPIENT_TTL_SECONDS, "NX");
    },
    async getTitle(thread) {
      return (await redis.get(keys.title(thread))) ?? undefined;
    },
  };
}

/** A {@link RecipientStore} in this process only (single-process setups and tests). */
export function memoryRecipientStore(): RecipientStore {
  const map = new Map<string, string>();
  const titles = new Map<string, string>();
  const key = (thread: ThreadRef) => `${thread.workspace}:${thread.channel}:${thread.thread}`;
  return {
    async set(thread, userId) {
      map.set(key(thread), userId);
    },
    async get(thread) {
      return map.get(key(thread));
    },
    async setTitle(thread, title) {
      if (!titles.has(key(thread))) titles.set(key(thread), title);
    },
    async getTitle(thread) {
      return titles.get(key(thread));
    },
  };
}
