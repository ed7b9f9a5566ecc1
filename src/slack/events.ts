import type { Attachment, ThreadRef } from "../chat/index.js";
import { allowed, type SlackAccess } from "./options.js";

/** A shared file as Slack describes it in message events (the fields we read). */
export interface SlackFile {
  name?: string;
  title?: string;
  mimetype?: string;
  size?: number;
  permalink?: string;
  url_private?: string;
}

/** A `message` / `app_mention` event (the fields we read), including `message_changed` / `_deleted`. */
export interface SlackMessageEvent {
  type?: string;
  subtype?: string;
  channel?: string | undefined;
  channel_type?: string | undefined;
  user?: string;
  bot_id?: string;
  username?: string;
  bot_profile?: { name?: string };
  text?: string;
  ts?: string;
  thread_ts?: string;
  files?: SlackFile[];
  message?: SlackMessageEvent;
  previous_message?: SlackMessageEvent;
  deleted_ts?: string;
}

/** The bot's own identity (from `auth.test`). */
export interface SlackSelf {
  userId: string;
  botId: string | undefined;
}

/** Message subtypes that are ordinary messages by someone. */
const ORDINARY_SUBTYPES = new Set([undefined, "file_share", "thread_broadcast", "bot_message", "me_message"]);

/** What a message event is to Threadline. */
export type MessageEventKind =
  | { kind: "message"; message: SlackMessageEvent }
  | { kind: "edited"; message: SlackMessageEvent }
  | { kind: "deleted"; ts: string; threadTs: string }
  | { kind: "ignored" };

/** Sorts a message event: a new message, an edit, a deletion, or something to ignore (joins, topics…). */
export function classifyMessageEvent(event: SlackMessageEvent): MessageEventKind {
  if (event.subtype === "message_changed" && event.message) {
    const previous = event.previous_message;
    // Slack also reports thread bookkeeping (reply counts, unfurls) as changes; only new text counts.
    if (previous !== undefined && previous.text === event.message.text) return { kind: "ignored" };
    return {
      kind: "edited",
      message: { ...event.message, channel: event.channel, channel_type: event.channel_type },
    };
  }
  if (event.subtype === "message_deleted" && event.deleted_ts) {
    const threadTs = event.previous_message?.thread_ts ?? event.deleted_ts;
    return { kind: "deleted", ts: event.deleted_ts, threadTs };
  }
  if (!ORDINARY_SUBTYPES.has(event.subtype) || !event.ts || !event.channel) return { kind: "ignored" };
  return { kind: "message", message: event };
}

/** Who wrote a message, as far as access goes. */
export type Authorship =
  | { kind: "self" }
  | { kind: "refused" }
  | { kind: "person"; id: string; isBot: boolean };

/**
 * Decides whether a message's author may talk to the bot: the bot itself and bots not on the allowlist
 * are refused, as are users outside the user allowlist (allowlisted bots pass it).
 */
export function authorOf(message: SlackMessageEvent, self: SlackSelf, access: SlackAccess): Authorship {
  if (message.user === self.userId || (self.botId !== undefined && message.bot_id === self.botId)) {
    return { kind: "self" };
  }
  if (message.bot_id !== undefined || message.subtype === "bot_message") {
    if (!message.bot_id || !access.bots.includes(message.bot_id)) return { kind: "refused" };
    return { kind: "person", id: message.user ?? message.bot_id, isBot: true };
  }
  if (!message.user || !allowed(access.users, message.user)) return { kind: "refused" };
  return { kind: "person", id: message.user, isBot: false };
}

/** True when the workspace and channel pass the allowlists (and DMs are on, for DMs). */
export function placeAllowed(team: string, channel: string, isDirect: boolean, access: SlackAccess): boolean {
  if (!allowed(access.teams, team) || !allowed(access.channels, channel)) return false;
  return !isDirect || access.directMessages;
}

/** True for a direct message channel (`D…`, or `channel_type: "im"`). */
export function isDirectChannel(channel: string, channelType?: string): boolean {
  return channelType === "im" || channel.startsWith("D");
}

/** The thread of a message: its `thread_ts`, or the message itself when it is top-level. */
export function threadOfMessage(team: string, message: SlackMessageEvent): ThreadRef {
  return {
    platform: "slack",
    workspace: team,
    channel: message.channel ?? "",
    thread: message.thread_ts ?? message.ts ?? "",
  };
}

/** True when `text` mentions `userId` (`<@U123>` or `<@U123|name>`). */
export function mentions(text: string, userId: string): boolean {
  return text.includes(`<@${userId}>`) || text.includes(`<@${userId}|`);
}

/** The text without mentions of the bot (the model knows it is being addressed), trimmed. */
export function withoutBotMention(text: string, botUserId: string): string {
  return text
    .replace(new RegExp(`<@${escapeRegExp(botUserId)}(?:\\|[^>]*)?>`, "g"), "")
    .replace(/[ \t]{2,}/g, " ")
    .trim();
}

/** Shared files as attachments (listed to the agent, not downloaded). */
export function attachmentsOf(files: SlackFile[] | undefined): Attachment[] {
  return (files ?? []).map((file) => {
    const attachment: Attachment = { name: file.name ?? file.title ?? "file" };
    const url = file.permalink ?? file.url_private;
    if (url !== undefined) attachment.url = url;
    if (file.mimetype !== undefined) attachment.mimeType = file.mimetype;
    if (file.size !== undefined) attachment.sizeBytes = file.size;
    return attachment;
  });
}

/** Slack's `1700000000.000100` timestamps as ms since epoch. */
export function tsToMs(ts: string): number {
  return Math.round(Number.parseFloat(ts) * 1000);
}

/** A reaction name without its skin tone (`thumbsup::skin-tone-2` → `thumbsup`). */
export function baseEmoji(name: string): string {
  return name.split("::")[0] ?? name;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
