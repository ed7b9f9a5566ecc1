import {
  type ChatUser,
  REACTION_ROLES,
  type ReactionEvent,
  reactionRoleOf,
  type ThreadRef,
} from "../chat/index.js";
import type { RunsConfig } from "./config.js";
import type { GatewayChat } from "./gateway-chat.js";
import type { Intake, StopResult } from "./intake.js";

/**
 * 🛑 and a platform's stop control alike: intake stops the run if `user` may, else they are told why
 * privately. Answers what intake did. Rejects on Redis errors.
 */
export async function stopFor(
  intake: Intake,
  chat: GatewayChat,
  thread: ThreadRef,
  user: ChatUser,
  fields: Record<string, unknown>,
): Promise<StopResult["kind"]> {
  const stopped = await intake.stop(thread, user);
  if (stopped.kind === "refused") await chat.notify(thread, user.id, stopped.reason, fields);
  return stopped.kind;
}

/**
 * A person's reaction added to a message: 🛑 stops the run ({@link stopFor}); a disposition's mark moves
 * the queued message there when its author or an approver reacted, then shows the new mark before taking
 * the old one back (the visible state is never empty). Bots' reactions, removals and other emoji change
 * nothing. Rejects on Redis errors.
 */
export async function reactionChange(
  intake: Intake,
  chat: GatewayChat,
  approvers: RunsConfig["approvers"],
  event: ReactionEvent,
): Promise<void> {
  if (!event.added || event.user.isBot) return;
  const { thread, messageId, user, emoji } = event;
  const role = reactionRoleOf(chat.marks, emoji);
  if (role === "stop") {
    await stopFor(intake, chat, thread, user, { messageId });
    return;
  }
  const disposition = role === undefined ? undefined : REACTION_ROLES[role].disposition;
  if (!disposition) return;
  const author = await intake.messageAuthor(thread, messageId);
  if (author !== user.id && !approvers.includes(user.id)) return;
  const previous = await intake.changeDisposition(thread, messageId, disposition);
  if (previous === undefined) return;
  const old = previous === disposition ? undefined : chat.queueMark(previous);
  await chat.safely("react", { messageId }, async () => {
    await chat.ackQueued(thread, messageId, emoji);
    if (old) await chat.outbound.unreact(thread, messageId, old);
  });
}
