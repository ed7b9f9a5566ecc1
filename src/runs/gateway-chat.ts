import {
  type ChatOutbound,
  type IncomingMessage,
  queueMarkOf,
  type ReactionNames,
  type ThreadRef,
} from "../chat/index.js";
import type { Intake, SubmitResult } from "./intake.js";
import type { DurableSubmitResult } from "./intake-retry.js";
import type { RunLogger } from "./setup.js";

/** What the author of a message that could not be stored is told (privately). */
export const NOT_STORED_NOTICE =
  "I couldn't take your message in: my storage is unreachable right now. Please send it again in a moment.";

/**
 * What the author of a reply queued while approval cards wait is told (privately): the card(s) still need a
 * button, and the reply is read after them. `tools` are the waiting tools' names (non-empty).
 */
export function approvalWaitingNotice(tools: readonly string[]): string {
  const names = [...new Set(tools)].map((tool) => `\`${tool}\``);
  const list = names.length === 1 ? names[0] : `${names.slice(0, -1).join(", ")} and ${names.at(-1)}`;
  const it = tools.length === 1 ? "it" : "them";
  return `Still waiting for Approve/Deny on ${list}; your message will be read after ${it}.`;
}

type Fields = Record<string, unknown>;

/**
 * How the gateway shows what intake did: the reaction vocabulary on a message and private notices to a
 * user. Every chat call goes through {@link GatewayChat.safely}: a failed reaction or notice is logged and
 * never rejects (the intake decision stands whatever the chat does).
 */
export class GatewayChat {
  constructor(
    readonly outbound: ChatOutbound,
    private readonly intake: Pick<Intake, "messageState">,
    readonly marks: ReactionNames,
    private readonly log: RunLogger,
  ) {}

  /** Runs a chat update; a failure is logged with `fields` and `operation`, never thrown. */
  async safely(operation: string, fields: Fields, action: () => Promise<unknown>): Promise<void> {
    try {
      await action();
    } catch (err) {
      this.log.warn({ ...fields, err, operation }, "chat update failed");
    }
  }

  /** 👀 on a message (safely). */
  seen(thread: ThreadRef, messageId: string): Promise<void> {
    return this.safely("react", { messageId }, () => this.outbound.react(thread, messageId, this.marks.seen));
  }

  /** A private notice to `userId` (safely). */
  notify(thread: ThreadRef, userId: string, text: string, fields: Fields): Promise<void> {
    return this.safely("notify", fields, () => this.outbound.notify(thread, userId, text));
  }

  /** The mark a queued message of `disposition` wears. */
  queueMark(disposition: string): string | undefined {
    return queueMarkOf(this.marks, disposition);
  }

  /** Adds the ack for a queued message; takes it back if a worker delivered the message meanwhile. Throws. */
  async ackQueued(thread: ThreadRef, messageId: string, emoji: string): Promise<void> {
    await this.outbound.react(thread, messageId, emoji);
    const state = await this.intake.messageState(thread, messageId);
    if (state !== "queued") await this.outbound.unreact(thread, messageId, emoji);
  }
}

/**
 * Shows the outcome of storing `message` (after its 👀, if any, was added): ⚠️ and a notice when it could
 * not be stored, the queued mark (and a notice while approval cards wait), ⚠️ and the reason when refused,
 * 🛑 for a stop word that stops the run, the reason for one that cannot, and for a setting command the
 * confirmation or the reason it was not applied (its 👀 taken back). Started, duplicate and ignored
 * messages show nothing more. Never rejects.
 */
export async function showSubmitted(
  chat: GatewayChat,
  message: IncomingMessage,
  result: DurableSubmitResult,
  log: RunLogger,
): Promise<void> {
  const fields = { messageId: message.id };
  const { thread, id, author } = message;
  const { outbound, marks } = chat;
  switch (result.kind) {
    case "failed":
      log.error(
        { ...fields, thread: thread.thread, attempts: result.attempts, err: result.error },
        "message not stored; gave up",
      );
      await chat.safely("react", fields, async () => {
        await outbound.react(thread, id, marks.refused);
        if (message.mentionsBot) await outbound.unreact(thread, id, marks.seen);
      });
      await chat.notify(thread, author.id, NOT_STORED_NOTICE, fields);
      break;
    case "queued":
      await showQueued(chat, message, result);
      break;
    case "refused":
      await chat.safely("react", fields, () => outbound.react(thread, id, marks.refused));
      await chat.notify(thread, author.id, result.reason, fields);
      break;
    case "stopping":
      await chat.safely("react", fields, () => outbound.react(thread, id, marks.stop));
      break;
    case "stopRefused":
    case "stopIdle":
      await chat.notify(thread, author.id, result.reason, fields);
      break;
    case "setting":
    case "settingRefused":
      // A command starts no run: the 👀 of a mention goes again.
      if (message.mentionsBot)
        await chat.safely("react", fields, () => outbound.unreact(thread, id, marks.seen));
      await chat.notify(thread, author.id, result.kind === "setting" ? result.notice : result.reason, fields);
      break;
    default:
      break;
  }
}

async function showQueued(
  chat: GatewayChat,
  message: IncomingMessage,
  result: Extract<SubmitResult, { kind: "queued" }>,
): Promise<void> {
  const fields = { messageId: message.id };
  const { thread, id } = message;
  const emoji = chat.queueMark(result.disposition) ?? chat.marks.steer;
  await chat.safely("react", fields, async () => {
    // The queued mark first: taking 👀 back may wait on a platform's tighter budget for removals.
    await chat.ackQueued(thread, id, emoji);
    if (message.mentionsBot) await chat.outbound.unreact(thread, id, chat.marks.seen);
  });
  // A text reply never decides a card: say so, or the author waits for an answer that cannot come.
  if (result.waitingApprovals.length > 0) {
    await chat.notify(thread, message.author.id, approvalWaitingNotice(result.waitingApprovals), fields);
  }
}
