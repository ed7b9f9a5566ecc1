import type { HistoryMessage, ThreadRef } from "../chat/index.js";
import type { SlackApi } from "./api.js";
import { authorOf, type SlackMessageEvent, type SlackSelf, tsToMs, withoutBotMention } from "./events.js";
import type { UserNames } from "./lookups.js";
import type { SlackAccess } from "./options.js";

/** Bounds of the context a mention inside an existing thread brings along. */
export interface HistoryLimits {
  /** Most recent earlier messages kept. Default 30. */
  maxMessages: number;
  /** Characters of earlier text kept (oldest messages dropped first). Default 8,000. */
  maxChars: number;
}

export const DEFAULT_HISTORY_LIMITS: HistoryLimits = { maxMessages: 30, maxChars: 8000 };

/**
 * The earlier messages of `thread` before message `beforeTs`, for a mention inside a thread the bot has
 * not taken part in: fetched with one `conversations.replies` call (up to 200 messages), oldest first,
 * bounded by `limits`. Returns `[]` when the bot has already posted in the thread (its transcript holds
 * the conversation), for a top-level message, or when Slack cannot be asked. Never rejects.
 */
export async function threadHistory(options: {
  api: SlackApi;
  names: UserNames;
  self: SlackSelf;
  access: SlackAccess;
  thread: ThreadRef;
  beforeTs: string;
  limits?: HistoryLimits;
}): Promise<HistoryMessage[]> {
  const { api, thread, beforeTs, self } = options;
  if (thread.thread === beforeTs) return [];
  const limits = options.limits ?? DEFAULT_HISTORY_LIMITS;
  let messages: SlackMessageEvent[];
  try {
    const result = await api.call(
      "conversations.replies",
      { team: thread.workspace, channel: thread.channel },
      { channel: thread.channel, ts: thread.thread, limit: 200 },
    );
    messages = (result.messages as SlackMessageEvent[] | undefined) ?? [];
  } catch {
    return [];
  }
  const earlier = messages.filter((message) => message.ts !== undefined && message.ts < beforeTs);
  if (earlier.some((message) => authorOf(message, self, options.access).kind === "self")) return [];
  const kept: { id: string; text: string; sentAt: number; isBot: boolean }[] = [];
  let chars = 0;
  for (const message of earlier.reverse()) {
    const author = authorOf(message, self, options.access);
    const text = withoutBotMention(message.text ?? "", self.userId);
    if (author.kind !== "person" || text === "") continue;
    if (kept.length >= limits.maxMessages || chars + text.length > limits.maxChars) break;
    chars += text.length;
    kept.unshift({ id: author.id, text, sentAt: tsToMs(message.ts!), isBot: author.isBot });
  }
  return Promise.all(
    kept.map(async (entry) => ({
      author: await options.names.user(thread.workspace, entry.id, entry.isBot),
      text: entry.text,
      sentAt: entry.sentAt,
    })),
  );
}
