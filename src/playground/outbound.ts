import { randomUUID } from "node:crypto";
import {
  type ApprovalCard,
  approvalCardText,
  type ChatOutbound,
  type ChatUser,
  type OutboundLimits,
  type PostedMessage,
  type ThreadRef,
} from "../chat/index.js";
import { PLAYGROUND_DIALECT } from "./dialect.js";
import type { PlaygroundStore } from "./store.js";

/**
 * The playground's limits: generous message size, and edits every 150 ms — a local Redis
 * write and one Server-Sent Event per edit are cheap, and it makes the streaming look smooth.
 */
export const PLAYGROUND_LIMITS: OutboundLimits = {
  maxMessageChars: 8000,
  minEditIntervalMs: 150,
};

/** The bot as playground messages name it. */
export const PLAYGROUND_BOT: ChatUser = { id: "threadline", name: "Threadline", isBot: true };

/**
 * {@link ChatOutbound} for the playground: every call is one write to the {@link PlaygroundStore} in
 * Redis, which publishes it to the browsers. Works in any process (gateway or worker); it never needs the
 * HTTP server. Rejects with {@link PlaygroundError} for unknown or deleted messages and for edits of
 * messages the bot did not post; rejects with the Redis error when Redis fails.
 */
export class PlaygroundOutbound implements ChatOutbound {
  readonly limits: OutboundLimits = PLAYGROUND_LIMITS;
  readonly dialect = PLAYGROUND_DIALECT;

  constructor(
    private readonly store: PlaygroundStore,
    private readonly bot: ChatUser = PLAYGROUND_BOT,
  ) {}

  async post(thread: ThreadRef, text: string): Promise<PostedMessage> {
    const id = messageId();
    await this.store.addMessage(thread.thread, {
      id,
      kind: "bot",
      author: this.bot,
      text,
      sentAt: Date.now(),
    });
    return { id };
  }

  async edit(thread: ThreadRef, messageId: string, text: string): Promise<void> {
    await this.store.editText(thread.thread, messageId, text, { kinds: ["bot"] });
  }

  async delete(thread: ThreadRef, messageId: string): Promise<void> {
    await this.store.deleteMessage(thread.thread, messageId, { kinds: ["bot", "approval"] });
  }

  async react(thread: ThreadRef, messageId: string, emoji: string): Promise<void> {
    await this.store.setReaction(thread.thread, messageId, emoji, this.bot, true);
  }

  async unreact(thread: ThreadRef, messageId: string, emoji: string): Promise<void> {
    await this.store.setReaction(thread.thread, messageId, emoji, this.bot, false);
  }

  async setStatus(thread: ThreadRef, status: string | null): Promise<void> {
    await this.store.setStatus(thread.thread, status);
  }

  /** The playground shows the reply as it is: the run's end only clears the status. */
  async endRun(thread: ThreadRef): Promise<void> {
    await this.store.setStatus(thread.thread, null);
  }

  async postApproval(thread: ThreadRef, card: ApprovalCard): Promise<PostedMessage> {
    const id = messageId();
    await this.store.addMessage(thread.thread, {
      id,
      kind: "approval",
      author: this.bot,
      text: approvalCardText(card, this.dialect),
      sentAt: Date.now(),
      card,
    });
    return { id };
  }

  async updateApproval(thread: ThreadRef, messageId: string, card: ApprovalCard): Promise<void> {
    await this.store.editCard(thread.thread, messageId, card, approvalCardText(card, this.dialect));
  }

  async notify(thread: ThreadRef, userId: string, text: string): Promise<void> {
    await this.store.notify(thread.thread, userId, text);
  }
}

function messageId(): string {
  return `b-${randomUUID()}`;
}
