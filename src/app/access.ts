import type { ChatInbound, ChatUser, ThreadRef } from "../chat/index.js";
import type { ThreadlineConfig } from "../config/index.js";

/**
 * Applies the config module's `allow` lists before the gateway sees an event: messages and reactions from
 * users or channels not listed are ignored (nothing starts, nothing is queued). Button clicks pass through:
 * approvals check their own permissions. Without lists, `inbound` is returned unchanged.
 */
export function restrictInbound(inbound: ChatInbound, allow: ThreadlineConfig["allow"]): ChatInbound {
  const users = allow?.users && allow.users.length > 0 ? new Set(allow.users) : undefined;
  const channels = allow?.channels && allow.channels.length > 0 ? new Set(allow.channels) : undefined;
  if (!users && !channels) return inbound;
  const allowed = (thread: ThreadRef, userId: string) =>
    (!users || users.has(userId)) && (!channels || channels.has(thread.channel));
  const stop = inbound.stop?.bind(inbound);
  return {
    message: (message) =>
      allowed(message.thread, message.author.id) ? inbound.message(message) : Promise.resolve(),
    messageEdited: (message) =>
      allowed(message.thread, message.author.id) ? inbound.messageEdited(message) : Promise.resolve(),
    messageDeleted: (thread, messageId) => inbound.messageDeleted(thread, messageId),
    reaction: (event) => (allowed(event.thread, event.user.id) ? inbound.reaction(event) : Promise.resolve()),
    button: (click) => inbound.button(click),
    // A platform's stop control is a stop request: the same rule as a 🛑 reaction.
    ...(stop
      ? {
          stop: (thread: ThreadRef, user: ChatUser) =>
            allowed(thread, user.id) ? stop(thread, user) : Promise.resolve(),
        }
      : {}),
  };
}
