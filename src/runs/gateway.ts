import {
  type ApprovalDecision,
  type ApprovalForm,
  type ButtonClick,
  type ButtonReply,
  type ChatInbound,
  type ChatOutbound,
  type ChatUser,
  type IncomingMessage,
  queueMarkOf,
  REACTION_ROLES,
  type ReactionEvent,
  reactionRoleOf,
  type ThreadRef,
  threadId,
} from "../chat/index.js";
import type { RunsConfig } from "./config.js";
import type { FormResult, Intake } from "./intake.js";
import { DEFAULT_INTAKE_RETRY, DurableSubmit, type IntakeRetryPolicy } from "./intake-retry.js";
import type { RunLogger } from "./setup.js";
import { SILENT_LOGGER } from "./setup.js";
import { traceGatewayOutbound, traceIntake, traceSubmit } from "./tracing.js";

export interface GatewayOptions {
  intake: Intake;
  /** The chat client of the platform the events come from (reactions, private notices). */
  outbound: ChatOutbound;
  config: RunsConfig;
  log?: RunLogger;
  /** How long a message is retried while Redis is away; default {@link DEFAULT_INTAKE_RETRY}. */
  intakeRetry?: Partial<IntakeRetryPolicy>;
}

/** Early acknowledgements remembered until their message arrives (a forgotten one costs a second reaction). */
const MAX_PENDING_ACKS = 10_000;

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

/**
 * The platform-neutral gateway: turns normalized chat events into intake operations and shows their
 * effect with the reaction vocabulary (DESIGN.md §1). It never runs an agent. `message` resolves once the
 * message is stored (adapters acknowledge the platform event then), retrying while Redis is away; when
 * the retries give up it marks the message ⚠️, tells its author to send it again, logs the message id and
 * resolves too (the failure is final and visible). The other handlers reject when Redis fails.
 */
export function createGateway(options: GatewayOptions): ChatInbound {
  const { intake, config } = options;
  // With tracing on, each ack and notice is a span under the message's `intake` span.
  const outbound = traceGatewayOutbound(options.outbound);
  const log = options.log ?? SILENT_LOGGER;
  const marks = config.reactions;
  const durable = new DurableSubmit(intake, { ...DEFAULT_INTAKE_RETRY, ...options.intakeRetry }, log);

  const safely = async (
    operation: string,
    fields: Record<string, unknown>,
    action: () => Promise<unknown>,
  ) => {
    try {
      await action();
    } catch (err) {
      log.warn({ ...fields, err, operation }, "chat update failed");
    }
  };

  /** Adds the ack for a queued message; takes it back if a worker delivered the message meanwhile. */
  const ackQueued = async (thread: ThreadRef, messageId: string, emoji: string) => {
    await outbound.react(thread, messageId, emoji);
    const state = await intake.messageState(thread, messageId);
    if (state !== "queued") await outbound.unreact(thread, messageId, emoji);
  };

  /** The mark a queued message of `disposition` wears. */
  const queueMark = (disposition: string): string | undefined => queueMarkOf(marks, disposition);

  /** 🛑 and a platform's stop control alike: stop if allowed, else a private notice. */
  const stop = async (thread: ThreadRef, user: ChatUser, fields: Record<string, unknown>) => {
    const stopped = await intake.stop(thread, user);
    if (stopped.kind === "refused") {
      await safely("notify", fields, () => outbound.notify(thread, user.id, stopped.reason));
    }
    return stopped.kind;
  };

  /**
   * 👀 reactions an adapter asked for on arrival ({@link ChatInbound.acknowledge}), until `message` takes
   * them over (it waits for the reaction before it may take it back): an event delivered twice on arrival
   * (Slack's `message` and `app_mention`) reacts once; a later replay reacts again, as before. Bounded.
   */
  const acknowledged = new Map<string, Promise<void>>();
  const ackKey = (thread: ThreadRef, messageId: string) => `${threadId(thread)}\n${messageId}`;
  const seenMark = (thread: ThreadRef, messageId: string) =>
    safely("react", { messageId }, () => outbound.react(thread, messageId, marks.seen));

  return {
    acknowledge(thread: ThreadRef, messageId: string) {
      const key = ackKey(thread, messageId);
      const running = acknowledged.get(key);
      if (running) return running;
      const reacting = seenMark(thread, messageId);
      acknowledged.set(key, reacting);
      if (acknowledged.size > MAX_PENDING_ACKS) acknowledged.delete(acknowledged.keys().next().value!);
      return reacting;
    },

    async message(message: IncomingMessage) {
      const key = ackKey(message.thread, message.id);
      const early = acknowledged.get(key);
      acknowledged.delete(key);
      await traceIntake(message, async () => {
        const fields = { messageId: message.id };
        // The mention is acknowledged at once (by the adapter on arrival, or here), before any worker
        // picks the run up; storing it does not wait for the reaction.
        const seen =
          early ?? (message.mentionsBot ? seenMark(message.thread, message.id) : Promise.resolve());
        const result = await traceSubmit(() => durable.submit(message));
        await seen;
        switch (result.kind) {
          case "failed": {
            const { attempts, error: err } = result;
            log.error(
              { ...fields, thread: message.thread.thread, attempts, err },
              "message not stored; gave up",
            );
            await safely("react", fields, async () => {
              await outbound.react(message.thread, message.id, marks.refused);
              if (message.mentionsBot) await outbound.unreact(message.thread, message.id, marks.seen);
            });
            await safely("notify", fields, () =>
              outbound.notify(message.thread, message.author.id, NOT_STORED_NOTICE),
            );
            break;
          }
          case "queued": {
            const emoji = queueMark(result.disposition) ?? marks.steer;
            await safely("react", fields, async () => {
              // The queued mark first: taking 👀 back may wait on a platform's tighter budget for removals.
              await ackQueued(message.thread, message.id, emoji);
              if (message.mentionsBot) await outbound.unreact(message.thread, message.id, marks.seen);
            });
            // A text reply never decides a card: say so, or the author waits for an answer that cannot come.
            if (result.waitingApprovals.length > 0) {
              await safely("notify", fields, () =>
                outbound.notify(
                  message.thread,
                  message.author.id,
                  approvalWaitingNotice(result.waitingApprovals),
                ),
              );
            }
            break;
          }
          case "refused":
            await safely("react", fields, () => outbound.react(message.thread, message.id, marks.refused));
            await safely("notify", fields, () =>
              outbound.notify(message.thread, message.author.id, result.reason),
            );
            break;
          case "stopping":
            await safely("react", fields, () => outbound.react(message.thread, message.id, marks.stop));
            break;
          case "stopRefused":
          case "stopIdle":
            await safely("notify", fields, () =>
              outbound.notify(message.thread, message.author.id, result.reason),
            );
            break;
          default:
            break;
        }
      });
    },

    async messageEdited(message: IncomingMessage) {
      await intake.edit(message);
    },

    async messageDeleted(thread: ThreadRef, messageId: string) {
      await intake.withdraw(thread, messageId);
    },

    async reaction(event: ReactionEvent) {
      if (!event.added || event.user.isBot) return;
      const { thread, messageId, user, emoji } = event;
      const role = reactionRoleOf(marks, emoji);
      if (role === "stop") {
        await stop(thread, user, { messageId });
        return;
      }
      const disposition = role === undefined ? undefined : REACTION_ROLES[role].disposition;
      if (!disposition) return;
      const author = await intake.messageAuthor(thread, messageId);
      if (author !== user.id && !config.approvers.includes(user.id)) return;
      const previous = await intake.changeDisposition(thread, messageId, disposition);
      if (previous === undefined) return;
      const old = previous === disposition ? undefined : queueMark(previous);
      await safely("react", { messageId }, async () => {
        // The new mark first (the visible state is never empty), then the one the message wore.
        await ackQueued(thread, messageId, emoji);
        if (old) await outbound.unreact(thread, messageId, old);
      });
    },

    async stop(thread: ThreadRef, user: ChatUser) {
      if (user.isBot) return undefined;
      return stop(thread, user, { thread: thread.thread, via: "platform stop" });
    },

    async button(click: ButtonClick): Promise<ButtonReply> {
      const result = await intake.decide(
        click.thread,
        click.approvalId,
        click.user,
        click.decision,
        click.reason,
        click.decision === "approve" ? click.editedArguments : undefined,
      );
      if (result.kind === "accepted") return { kind: "none" };
      if (result.kind === "invalid") return result;
      return { kind: "notice", text: decideNotice(result, click.decision) };
    },

    async approvalForm(thread: ThreadRef, approvalId: string, user: ChatUser): Promise<ApprovalForm> {
      const result = await intake.approvalForm(thread, approvalId, user);
      return result.kind === "form" ? result : { kind: "notice", text: decideNotice(result, "deny") };
    },
  };
}

/** The private notice for a click or form that decided nothing. */
function decideNotice(result: Exclude<FormResult, { kind: "form" }>, decision: ApprovalDecision): string {
  switch (result.kind) {
    case "forbidden":
      return decision === "alwaysThread"
        ? "You can't allow this tool for everyone in this thread: only the configured approvers can."
        : "You can't approve this: only the person who asked and the configured approvers can.";
    case "expired":
      return "This approval has expired; the tool call was denied.";
    case "already":
      return `This was already decided${result.by ? ` by ${result.by.name}` : ""} (${result.status}).`;
    default:
      return "This approval is no longer pending.";
  }
}
