import { type ThreadRef, threadId } from "../chat/index.js";

/** Early acknowledgements remembered until their message arrives (a forgotten one costs a second reaction). */
const MAX_PENDING_ACKS = 10_000;

/**
 * 👀 reactions an adapter asked for on arrival ({@link ChatInbound.acknowledge}), until the gateway's
 * `message` takes them over (it waits for the reaction before it may take it back): an event delivered
 * twice on arrival (Slack's `message` and `app_mention`) reacts once; a later replay reacts again, as
 * before. Bounded (the oldest is forgotten first).
 */
export class EarlyAcks {
  private readonly pending = new Map<string, Promise<void>>();

  /** `react` adds the 👀 and never rejects. */
  constructor(private readonly react: (thread: ThreadRef, messageId: string) => Promise<void>) {}

  /** Reacts unless a reaction for the message is already pending; resolves when it is added. */
  acknowledge(thread: ThreadRef, messageId: string): Promise<void> {
    const key = ackKey(thread, messageId);
    const running = this.pending.get(key);
    if (running) return running;
    const reacting = this.react(thread, messageId);
    this.pending.set(key, reacting);
    if (this.pending.size > MAX_PENDING_ACKS) this.pending.delete(this.pending.keys().next().value!);
    return reacting;
  }

  /** The message's pending reaction, if any, handed over (forgotten here). */
  take(thread: ThreadRef, messageId: string): Promise<void> | undefined {
    const key = ackKey(thread, messageId);
    const early = this.pending.get(key);
    this.pending.delete(key);
    return early;
  }
}

function ackKey(thread: ThreadRef, messageId: string): string {
  return `${threadId(thread)}\n${messageId}`;
}
