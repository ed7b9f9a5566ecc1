import { type ChatOutbound, queueMarkOf, type ReactionNames, type ThreadRef } from "../chat/index.js";
import type { RunLogger } from "./setup.js";

/**
 * The marks a worker puts on queued messages once their fate is known: ✅ delivered, ⏹ not processed. A mark
 * is replaced new-first (the visible state is never empty, and adding is not held behind the platforms'
 * tighter budget for removals — Slack allows 20 `reactions.remove` a minute), and only the mark the message
 * wears is removed, not every mark it could wear. Never throws: a failed mark is logged.
 */
export class QueueMarks {
  constructor(
    private readonly outbound: ChatOutbound,
    private readonly thread: ThreadRef,
    private readonly reactions: ReactionNames,
    private readonly log: RunLogger,
    private readonly fields: Record<string, unknown>,
  ) {}

  /** A drained message of `kind` (steer, followUp, interrupt; a prompt wears no queue mark) entered the transcript. */
  delivered(messageId: string, kind: string): void {
    void this.replace(messageId, this.markOf(kind), this.reactions.delivered);
  }

  /** Messages a stopped run left queued, with the disposition each had. */
  notProcessed(messages: readonly { id: string; disposition: string }[]): void {
    for (const { id, disposition } of messages) {
      void this.replace(id, this.markOf(disposition), this.reactions.notProcessed);
    }
  }

  /** The mark a queued message of `kind` wears (the gateway's ack), or undefined for a prompt. */
  private markOf(kind: string): string | undefined {
    return queueMarkOf(this.reactions, kind);
  }

  private async replace(messageId: string, remove: string | undefined, add: string): Promise<void> {
    try {
      await this.outbound.react(this.thread, messageId, add);
      if (remove) await this.outbound.unreact(this.thread, messageId, remove);
    } catch (err) {
      this.log.warn({ ...this.fields, err, messageId }, "could not update message marks");
    }
  }
}
