import { randomBytes, randomUUID } from "node:crypto";
import {
  type ApprovalDecision,
  type ApprovalForm,
  type ButtonReply,
  type ChatInbound,
  type ChatUser,
  DeliveryDedupe,
  type IncomingMessage,
  type ThreadRef,
  ThreadSerial,
} from "../chat/index.js";
import { PlaygroundError, type PlaygroundStore } from "./store.js";
import type { PlaygroundMessage, PlaygroundThread } from "./types.js";

/** The workspace and channel every playground thread lives in. */
export const PLAYGROUND_WORKSPACE = "local";
export const PLAYGROUND_CHANNEL = "playground";

/** The ThreadRef of a playground thread id. */
export function playgroundThread(id: string): ThreadRef {
  return { platform: "playground", workspace: PLAYGROUND_WORKSPACE, channel: PLAYGROUND_CHANNEL, thread: id };
}

/** A thread title from its first message: the first line, at most 60 characters. */
export function threadTitle(text: string): string {
  const line = text.trim().split("\n")[0]?.trim() ?? "";
  if (line === "") return "New thread";
  return line.length > 60 ? `${line.slice(0, 59)}…` : line;
}

/** Options of {@link PlaygroundActions}. */
export interface PlaygroundActionsOptions {
  store: PlaygroundStore;
  inbound: ChatInbound;
  /** The bot's display name; `@<name>` in a message mentions it. */
  botName: string;
}

/**
 * What people do in the playground, as the HTTP API exposes it: each action records its visible effect in
 * the {@link PlaygroundStore} first (so the browser shows it and the gateway's reactions have a message
 * to land on) and then hands the normalized event to the {@link ChatInbound}, exactly as the Slack and
 * Discord adapters do. The events of one thread reach the inbound in the order their requests arrived
 * ({@link ThreadSerial}); a request is answered once the gateway stored the message (it retries while
 * Redis is away). Actions reject with `PlaygroundError` when the thread or message is unknown or the user
 * may not change it, and with whatever the inbound rejects with.
 */
export class PlaygroundActions {
  private readonly store: PlaygroundStore;
  private readonly inbound: ChatInbound;
  private readonly mention: RegExp;
  private readonly serial = new ThreadSerial();
  /** Submissions by the browser's draft id: a double submit (Enter twice, a resent request) posts once. */
  private readonly submissions = new DeliveryDedupe();

  constructor(options: PlaygroundActionsOptions) {
    this.store = options.store;
    this.inbound = options.inbound;
    const name = options.botName.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    this.mention = new RegExp(`(^|\\s)@${name}\\b[,:]?\\s*`, "gi");
  }

  /**
   * Starts a thread with a message that mentions the bot. With `draftId` (the browser's id of what was
   * typed), a second submission of the same draft by the same user starts nothing and resolves like the
   * first (the same thread and message); a failed one may be submitted again.
   */
  createThread(
    user: ChatUser,
    text: string,
    draftId?: string,
  ): Promise<{ thread: PlaygroundThread; message: PlaygroundMessage }> {
    if (draftId === undefined) return this.startThread(user, text);
    return this.submissions.run(`thread:${user.id}:${draftId}`, () => this.startThread(user, text));
  }

  private async startThread(
    user: ChatUser,
    text: string,
  ): Promise<{ thread: PlaygroundThread; message: PlaygroundMessage }> {
    const now = Date.now();
    if (this.stripMention(text).text === "") throw new PlaygroundError("createThread", "empty_message", "-");
    const thread: PlaygroundThread = {
      id: `t-${randomBytes(6).toString("hex")}`,
      title: threadTitle(this.stripMention(text).text),
      createdAt: now,
      createdBy: user,
      lastActivity: now,
    };
    const message = await this.submit(thread.id, user, text, true, thread);
    return { thread, message };
  }

  /**
   * Posts a reply in a thread; it mentions the bot when it contains `@<bot name>`. With `draftId`, a second
   * submission of the same draft by the same user posts nothing and resolves with the first's message.
   */
  reply(threadId: string, user: ChatUser, text: string, draftId?: string): Promise<PlaygroundMessage> {
    const post = async () => {
      await this.requireThread("reply", threadId);
      return this.submit(threadId, user, text, false);
    };
    if (draftId === undefined) return post();
    return this.submissions.run(`reply:${threadId}:${user.id}:${draftId}`, post);
  }

  /** Replaces the text of the user's own message. */
  async edit(threadId: string, messageId: string, user: ChatUser, text: string): Promise<void> {
    const { text: clean, mentionsBot } = this.stripMention(text);
    if (clean === "") throw new PlaygroundError("edit", "empty_message", threadId);
    await this.store.editText(threadId, messageId, clean, { kinds: ["user"], authorId: user.id });
    const edited = this.incoming(threadId, messageId, user, clean, mentionsBot);
    await this.serial.run(edited.thread, () => this.inbound.messageEdited(edited));
  }

  /** Deletes the user's own message. */
  async delete(threadId: string, messageId: string, user: ChatUser): Promise<void> {
    await this.store.deleteMessage(threadId, messageId, { kinds: ["user"], authorId: user.id });
    const thread = playgroundThread(threadId);
    await this.serial.run(thread, () => this.inbound.messageDeleted(thread, messageId));
  }

  /** Adds or removes the user's reaction (an emoji name) on any message. */
  async react(
    threadId: string,
    messageId: string,
    user: ChatUser,
    emoji: string,
    added: boolean,
  ): Promise<void> {
    await this.requireThread("react", threadId);
    if (!(await this.store.setReaction(threadId, messageId, emoji, user, added))) return;
    const thread = playgroundThread(threadId);
    await this.serial.run(thread, () => this.inbound.reaction({ thread, messageId, user, emoji, added }));
  }

  /**
   * Clicks an approval card's button; resolves with what only the clicker is told. A denial may carry a
   * `reason` (the playground's "Deny with reason…" form), which the model reads; an approval may carry
   * `editedArguments` (the "Edit and approve…" form; an invalid edit answers `{ kind: "invalid" }`).
   */
  async click(
    threadId: string,
    approvalId: string,
    user: ChatUser,
    decision: ApprovalDecision,
    reason?: string,
    editedArguments?: string,
  ): Promise<ButtonReply> {
    await this.requireThread("button", threadId);
    const thread = playgroundThread(threadId);
    return this.inbound.button({
      thread,
      approvalId,
      decision,
      user,
      ...(reason ? { reason } : {}),
      ...(editedArguments !== undefined && decision === "approve" ? { editedArguments } : {}),
    });
  }

  /**
   * What the "Edit and approve…" form starts with (the tool and its arguments as JSON), or the private
   * notice when `user` may not decide; decides nothing (the submission is checked again by {@link click}).
   */
  async approvalForm(threadId: string, approvalId: string, user: ChatUser): Promise<ApprovalForm> {
    await this.requireThread("button", threadId);
    if (!this.inbound.approvalForm) return { kind: "notice", text: "This approval can't be changed here." };
    return this.inbound.approvalForm(playgroundThread(threadId), approvalId, user);
  }

  /**
   * Stores a user's message and hands it to the gateway in the same turn, without waiting a round trip in
   * between: Redis applies one connection's commands in the order they were sent, so the gateway's
   * acknowledgement (written through the same store) always lands on a stored message. A mention is
   * acknowledged as it is stored ({@link ChatInbound.acknowledge}, as the Slack adapter does on arrival),
   * not after the gateway's intake work; with `thread`, the thread is created in the same transaction.
   */
  private async submit(
    threadId: string,
    user: ChatUser,
    text: string,
    forceMention: boolean,
    thread?: PlaygroundThread,
  ): Promise<PlaygroundMessage> {
    const stripped = this.stripMention(text);
    if (stripped.text === "") throw new PlaygroundError("reply", "empty_message", threadId);
    const mentionsBot = forceMention || stripped.mentionsBot;
    const message: PlaygroundMessage = {
      id: `u-${randomUUID()}`,
      kind: "user",
      author: user,
      text: stripped.text,
      sentAt: Date.now(),
      reactions: [],
    };
    if (mentionsBot) message.mentionsBot = true;
    const stored = this.store.addMessage(threadId, message, thread ? { thread } : {});
    const incoming = this.incoming(threadId, message.id, user, message.text, mentionsBot);
    if (mentionsBot) void this.inbound.acknowledge?.(incoming.thread, message.id, user.id);
    const handed = this.serial.run(incoming.thread, () => this.inbound.message(incoming));
    await Promise.all([stored, handed]);
    return message;
  }

  private incoming(
    threadId: string,
    id: string,
    author: ChatUser,
    text: string,
    mentionsBot: boolean,
  ): IncomingMessage {
    return {
      id,
      thread: playgroundThread(threadId),
      author,
      text,
      attachments: [],
      mentionsBot,
      sentAt: Date.now(),
    };
  }

  private stripMention(text: string): { text: string; mentionsBot: boolean } {
    const stripped = text.replace(this.mention, "$1").trim();
    return { text: stripped, mentionsBot: stripped !== text.trim() };
  }

  private async requireThread(operation: string, threadId: string): Promise<void> {
    if (!(await this.store.hasThread(threadId)))
      throw new PlaygroundError(operation, "thread_not_found", threadId);
  }
}
