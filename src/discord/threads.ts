import type { ThreadRef } from "../chat/index.js";

/** The `workspace` of DM threads (Discord's own name for the DM "guild"). */
export const DM_WORKSPACE = "@me";

/** Longest thread name Discord accepts. */
const MAX_THREAD_NAME = 100;

/**
 * Where a Discord message was posted, as far as conversations are concerned:
 * - `dm`: a DM channel (the whole DM is one thread);
 * - `text`: a guild text or announcement channel (a mention there starts a thread on the message);
 * - `thread`: a thread, `forum` when its parent is a forum or media channel (a post);
 * - `other`: anywhere the bot does not converse (voice chats, group DMs, unknown channels).
 */
export type ChannelPlace =
  | { kind: "dm"; channelId: string }
  | { kind: "text"; guildId: string; channelId: string }
  | { kind: "thread"; guildId: string; threadId: string; parentId: string; forum: boolean }
  | { kind: "other" };

/**
 * The thread a message at `place` belongs to. Discord threads started on a message share its id, so a
 * message in a text channel maps to the thread started on it (whether or not it exists yet). Forum and
 * media posts are their own channel (their starter message lives inside the post), so `channel` is the
 * post itself; other threads keep their parent channel. `undefined` for places without conversations.
 */
export function threadRefIn(place: ChannelPlace, messageId: string): ThreadRef | undefined {
  switch (place.kind) {
    case "dm":
      return {
        platform: "discord",
        workspace: DM_WORKSPACE,
        channel: place.channelId,
        thread: place.channelId,
      };
    case "text":
      return { platform: "discord", workspace: place.guildId, channel: place.channelId, thread: messageId };
    case "thread":
      return {
        platform: "discord",
        workspace: place.guildId,
        channel: place.forum ? place.threadId : place.parentId,
        thread: place.threadId,
      };
    default:
      return undefined;
  }
}

/**
 * The channel that holds message `messageId` of `thread`: the message a thread was started on (same id
 * as the thread) lives in the parent channel; every other message, and everything the bot posts, lives
 * in the thread channel. DMs and forum posts are one channel either way.
 */
export function channelOfMessage(thread: ThreadRef, messageId: string): string {
  return messageId === thread.thread ? thread.channel : thread.thread;
}

/**
 * A thread name from the request that starts it: its first non-empty line, whitespace collapsed,
 * Markdown emphasis and code marks dropped, cut to Discord's 100 characters at a word boundary when
 * possible. `fallback` when nothing readable is left.
 */
export function threadName(text: string, fallback = "Threadline"): string {
  const line =
    text
      .split("\n")
      .map((part) =>
        part
          .replace(/[*_`~|>#]+/g, "")
          .replace(/\s+/g, " ")
          .trim(),
      )
      .find((part) => part !== "") ?? "";
  if (line === "") return fallback;
  if (line.length <= MAX_THREAD_NAME) return line;
  const cut = line.slice(0, MAX_THREAD_NAME - 1);
  const space = cut.lastIndexOf(" ");
  return `${space > MAX_THREAD_NAME / 2 ? cut.slice(0, space) : cut}…`;
}
