import type { ApprovalCard, ChatUser } from "../chat/index.js";

/** Who wrote a playground message: a person, the bot's text replies, or the bot's approval cards. */
export type PlaygroundMessageKind = "user" | "bot" | "approval";

/** Everyone who reacted to a message with one emoji (an emoji *name*, e.g. `compass`). */
export interface PlaygroundReaction {
  emoji: string;
  users: ChatUser[];
}

/** A message as the browser shows it. Deleted messages are not shown. */
export interface PlaygroundMessage {
  id: string;
  kind: PlaygroundMessageKind;
  author: ChatUser;
  /** Markdown (for approval cards: the plain-text fallback of the card). */
  text: string;
  /** ms since epoch. */
  sentAt: number;
  /** ms since epoch of the last edit, when edited. */
  editedAt?: number;
  /** True when a user message mentioned the bot. */
  mentionsBot?: boolean;
  /** The card, for `approval` messages. */
  card?: ApprovalCard;
  /** Reactions in the order they were first added. */
  reactions: PlaygroundReaction[];
}

/** A thread in the sidebar. `id` is the `thread` part of its ThreadRef. */
export interface PlaygroundThread {
  id: string;
  title: string;
  createdAt: number;
  createdBy: ChatUser;
  /** ms since epoch of the last message. */
  lastActivity: number;
}

/** A thread with everything the browser draws. */
export interface PlaygroundSnapshot {
  thread: PlaygroundThread;
  /** Visible messages in posting order. */
  messages: PlaygroundMessage[];
  /** The bot's "is thinking…" status, `null` when none. */
  status: string | null;
}

/**
 * A change, as published on the playground's Redis channel and forwarded to browsers over Server-Sent
 * Events. Every event is idempotent (it carries the new state, not a delta), so a browser that fetched a
 * snapshot while events were in flight converges by applying them again.
 */
export type PlaygroundEvent =
  | { type: "thread"; thread: PlaygroundThread }
  | { type: "message"; thread: string; message: PlaygroundMessage }
  | { type: "text"; thread: string; id: string; text: string; editedAt: number }
  | { type: "card"; thread: string; id: string; text: string; card: ApprovalCard; editedAt: number }
  | { type: "deleted"; thread: string; id: string }
  | { type: "reaction"; thread: string; id: string; emoji: string; user: ChatUser; added: boolean }
  | { type: "status"; thread: string; status: string | null }
  /** A private notice: only the browser of `userId` shows it. */
  | { type: "notice"; thread: string; userId: string; text: string };
