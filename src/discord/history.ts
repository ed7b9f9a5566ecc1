import { type APIMessage, type APIUser, MessageType, type REST, Routes } from "discord.js";
import {
  DEFAULT_HISTORY_LIMITS,
  type HistoryLimits,
  type HistoryMessage,
  historyWindow,
} from "../chat/index.js";

export { DEFAULT_HISTORY_LIMITS, type HistoryLimits };

/**
 * The earlier messages of thread channel `threadChannelId` before message `beforeId`, for a mention in a
 * thread or forum post the bot has not taken part in: one `GET /channels/{id}/messages` call, oldest
 * first, bounded by `limits`. The message a thread was started on is taken from the thread's starter
 * system message. Returns `[]` when the bot already posted in the thread (its transcript holds the
 * conversation) or when Discord cannot be asked. Never rejects.
 */
export async function threadHistory(options: {
  rest: REST;
  threadChannelId: string;
  beforeId: string;
  botId: string;
  limits?: HistoryLimits;
}): Promise<HistoryMessage[]> {
  const limits = options.limits ?? DEFAULT_HISTORY_LIMITS;
  let messages: APIMessage[];
  try {
    const query = new URLSearchParams({
      before: options.beforeId,
      limit: String(Math.min(100, limits.maxMessages)),
    });
    messages = (await options.rest.get(Routes.channelMessages(options.threadChannelId), {
      query,
    })) as APIMessage[];
  } catch {
    return [];
  }
  if (messages.some((message) => message.author.id === options.botId)) return [];
  return historyFromMessages(messages, options.botId, limits);
}

/**
 * Turns Discord messages (newest first, as the API lists them) into history entries, oldest first:
 * ordinary messages and replies, and the starter message a `THREAD_STARTER_MESSAGE` refers to; other
 * system messages, bots' messages and empty texts are skipped; the bot's mentions are removed and other
 * user mentions shown as `@name`. Keeps the newest messages within `limits`. Pure.
 */
export function historyFromMessages(
  messages: readonly APIMessage[],
  botId: string,
  limits: HistoryLimits = DEFAULT_HISTORY_LIMITS,
): HistoryMessage[] {
  const kept: HistoryMessage[] = [];
  const window = historyWindow(limits);
  for (const listed of messages) {
    const message = listed.type === MessageType.ThreadStarterMessage ? listed.referenced_message : listed;
    if (!message || (message.type !== MessageType.Default && message.type !== MessageType.Reply)) continue;
    if (message.author.bot || message.author.id === botId) continue;
    const text = readable(message, botId);
    if (text === "") continue;
    if (!window.admit(text)) break;
    kept.unshift({
      author: { id: message.author.id, name: nameOf(message.author) },
      text,
      sentAt: Date.parse(message.timestamp),
    });
  }
  return kept;
}

function readable(message: APIMessage, botId: string): string {
  const names = new Map(message.mentions.map((user) => [user.id, nameOf(user)]));
  return message.content
    .replace(new RegExp(`<@!?${botId}>`, "g"), " ")
    .replace(/<@!?(\d{17,20})>/g, (match, id: string) => {
      const name = names.get(id);
      return name === undefined ? match : `@${name}`;
    })
    .trim();
}

function nameOf(user: APIUser): string {
  return user.global_name ?? user.username;
}
