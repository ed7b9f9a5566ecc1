import type { ChatInbound, ChatOutbound, ChatUser, IncomingMessage, ThreadRef } from "../chat/index.js";
import type { RunsConfig } from "./config.js";
import { EarlyAcks } from "./early-acks.js";
import { decideClick, openApprovalForm } from "./gateway-approvals.js";
import { GatewayChat, showSubmitted } from "./gateway-chat.js";
import { reactionChange, stopFor } from "./gateway-reactions.js";
import { traceGatewayOutbound, traceIntake, traceSubmit } from "./gateway-tracing.js";
import type { Intake } from "./intake.js";
import { DEFAULT_INTAKE_RETRY, DurableSubmit, type IntakeRetryPolicy } from "./intake-retry.js";
import type { RunLogger } from "./setup.js";
import { SILENT_LOGGER } from "./setup.js";

export { approvalWaitingNotice, NOT_STORED_NOTICE } from "./gateway-chat.js";

export interface GatewayOptions {
  intake: Intake;
  /** The chat client of the platform the events come from (reactions, private notices). */
  outbound: ChatOutbound;
  config: RunsConfig;
  log?: RunLogger;
  /** How long a message is retried while Redis is away; default {@link DEFAULT_INTAKE_RETRY}. */
  intakeRetry?: Partial<IntakeRetryPolicy>;
}

/**
 * The platform-neutral gateway: turns normalized chat events into intake operations and shows their
 * effect with the reaction vocabulary (DESIGN.md §1). It never runs an agent. `message` resolves once the
 * message is stored (adapters acknowledge the platform event then), retrying while Redis is away; when
 * the retries give up it marks the message ⚠️, tells its author to send it again, logs the message id and
 * resolves too (the failure is final and visible). The other handlers reject when Redis fails.
 *
 * The parts: {@link GatewayChat} and {@link showSubmitted} (what the chat shows), {@link EarlyAcks} (👀 on
 * arrival), {@link reactionChange} and {@link stopFor} (reactions and stop controls), {@link decideClick}
 * and {@link openApprovalForm} (approval cards).
 */
export function createGateway(options: GatewayOptions): ChatInbound {
  const { intake, config } = options;
  const log = options.log ?? SILENT_LOGGER;
  // With tracing on, each ack and notice is a span under the message's `intake` span.
  const chat = new GatewayChat(traceGatewayOutbound(options.outbound), intake, config.reactions, log);
  const durable = new DurableSubmit(intake, { ...DEFAULT_INTAKE_RETRY, ...options.intakeRetry }, log);
  const early = new EarlyAcks((thread, messageId) => chat.seen(thread, messageId));

  return {
    acknowledge: (thread, messageId) => early.acknowledge(thread, messageId),
    message: (message) => intakeMessage(message, early.take(message.thread, message.id)),
    messageEdited: async (message) => {
      await intake.edit(message);
    },
    messageDeleted: async (thread, messageId) => {
      await intake.withdraw(thread, messageId);
    },
    reaction: (event) => reactionChange(intake, chat, config.approvers, event),
    stop: async (thread: ThreadRef, user: ChatUser) => {
      if (user.isBot) return undefined;
      return stopFor(intake, chat, thread, user, { thread: thread.thread, via: "platform stop" });
    },
    button: (click) => decideClick(intake, click),
    approvalForm: (thread, approvalId, user) => openApprovalForm(intake, thread, approvalId, user),
  };

  /** Stores one message (retrying) and shows the outcome; `acked` is its 👀 asked for on arrival. */
  function intakeMessage(message: IncomingMessage, acked: Promise<void> | undefined): Promise<void> {
    return traceIntake(message, async () => {
      // The mention is acknowledged at once (by the adapter on arrival, or here), before any worker
      // picks the run up; storing it does not wait for the reaction.
      const seen = acked ?? (message.mentionsBot ? chat.seen(message.thread, message.id) : Promise.resolve());
      const result = await traceSubmit(() => durable.submit(message));
      await seen;
      await showSubmitted(chat, message, result, log);
    });
  }
}
