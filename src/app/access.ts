import {
  type ChatInbound,
  type ChatOutbound,
  type ChatUser,
  type IncomingMessage,
  type ThreadRef,
  threadId,
} from "../chat/index.js";
import type { ThreadlineConfig } from "../config/index.js";
import type { RunLogger } from "../runs/index.js";

/** How often one person is told, per thread, that the allow list refused their message. */
export const REFUSAL_NOTICE_INTERVAL_MS = 10 * 60_000;
/** Threads × people whose last refusal notice is remembered (the oldest is forgotten first). */
const REMEMBERED_REFUSALS = 10_000;

/** The private notice for a mention the `allow.channels` list refused. */
export const CHANNEL_REFUSED_NOTICE =
  "I don't answer in this channel: it is not on this bot's allow list (`allow.channels`), so your message was not processed. Ask the bot's operator to add it.";
/** The private notice for a mention the `allow.users` list refused. */
export const USER_REFUSED_NOTICE =
  "You are not on this bot's allow list (`allow.users`), so your message was not processed. Ask the bot's operator to add you.";

/** What {@link restrictInbound} tells about refused messages. Both optional: without them refusals are silent. */
export interface RefusalReporting {
  /** Sends the private notice (`notify`) on the platform the message came from. */
  outbound?: Pick<ChatOutbound, "notify">;
  log?: RunLogger;
}

/**
 * Applies the config module's `allow` lists before the gateway sees an event: messages and reactions from
 * users or channels not listed are ignored (nothing starts, nothing is queued). A refused message that
 * mentions the bot (or is a DM) is logged (`message refused by the allow list`, with platform, channel,
 * user and which list) and its author gets a private notice through `reporting.outbound` — at most once per
 * person and thread every {@link REFUSAL_NOTICE_INTERVAL_MS}; other refused messages (chatter in a channel
 * the bot sits in, edits, reactions) stay silent. A failing notice is logged and never rejects. Button
 * clicks pass through: approvals check their own permissions. Without lists, `inbound` is returned unchanged.
 */
export function restrictInbound(
  inbound: ChatInbound,
  allow: ThreadlineConfig["allow"],
  reporting: RefusalReporting = {},
): ChatInbound {
  const users = allow?.users && allow.users.length > 0 ? new Set(allow.users) : undefined;
  const channels = allow?.channels && allow.channels.length > 0 ? new Set(allow.channels) : undefined;
  if (!users && !channels) return inbound;
  const refusal = (thread: ThreadRef, userId: string): "channels" | "users" | undefined =>
    channels && !channels.has(thread.channel)
      ? "channels"
      : users && !users.has(userId)
        ? "users"
        : undefined;
  const allowed = (thread: ThreadRef, userId: string) => refusal(thread, userId) === undefined;
  const report = createRefusalReport(reporting);
  const stop = inbound.stop?.bind(inbound);
  const acknowledge = inbound.acknowledge?.bind(inbound);
  return {
    // A refused mention is never acknowledged: nothing was seen as far as its author can tell.
    ...(acknowledge
      ? {
          acknowledge: (thread: ThreadRef, messageId: string, authorId: string) =>
            allowed(thread, authorId) ? acknowledge(thread, messageId, authorId) : Promise.resolve(),
        }
      : {}),
    message: (message) => {
      const list = refusal(message.thread, message.author.id);
      if (list === undefined) return inbound.message(message);
      return message.mentionsBot ? report(message, list) : Promise.resolve();
    },
    messageEdited: (message) =>
      allowed(message.thread, message.author.id) ? inbound.messageEdited(message) : Promise.resolve(),
    messageDeleted: (thread, messageId) => inbound.messageDeleted(thread, messageId),
    reaction: (event) => (allowed(event.thread, event.user.id) ? inbound.reaction(event) : Promise.resolve()),
    button: (click) => inbound.button(click),
    // A platform's stop control is a stop request: the same rule as a 🛑 reaction.
    ...(stop
      ? {
          stop: (thread: ThreadRef, user: ChatUser) =>
            allowed(thread, user.id) ? stop(thread, user) : Promise.resolve(undefined),
        }
      : {}),
  };
}

/** Logs a refused mention and tells its author privately (throttled per person and thread). */
function createRefusalReport(reporting: RefusalReporting) {
  const lastNotice = new Map<string, number>();
  return async (message: IncomingMessage, list: "channels" | "users"): Promise<void> => {
    const { thread, author } = message;
    const fields = {
      platform: thread.platform,
      channel: thread.channel,
      user: author.id,
      list: `allow.${list}`,
    };
    reporting.log?.info(fields, "message refused by the allow list");
    if (!reporting.outbound) return;
    const key = `${threadId(thread)}\n${author.id}`;
    const now = Date.now();
    const last = lastNotice.get(key);
    if (last !== undefined && now - last < REFUSAL_NOTICE_INTERVAL_MS) return;
    lastNotice.delete(key);
    lastNotice.set(key, now);
    if (lastNotice.size > REMEMBERED_REFUSALS) lastNotice.delete(lastNotice.keys().next().value!);
    try {
      await reporting.outbound.notify(
        thread,
        author.id,
        list === "channels" ? CHANNEL_REFUSED_NOTICE : USER_REFUSED_NOTICE,
      );
    } catch (err) {
      reporting.log?.warn({ ...fields, err }, "allow-list notice failed");
    }
  };
}
