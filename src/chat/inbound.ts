import type {
  ButtonClick,
  ChatOutbound,
  ChatUser,
  IncomingMessage,
  Platform,
  ReactionEvent,
  ThreadRef,
} from "./types.js";

/** What a platform's stop control did: stopped a run, was refused (told privately), or found none. */
export type PlatformStopOutcome = "stopping" | "refused" | "idle";
/**
 * What the clicker of an approval button is told (privately), if anything. `invalid`: an edit-and-approve
 * whose arguments did not validate — nothing was decided; the form shows `text` and the card stays pending.
 */
export type ButtonReply =
  | { kind: "none" }
  | { kind: "notice"; text: string }
  | { kind: "invalid"; text: string };

/**
 * What a platform form (deny with a reason, edit and approve) opens with: the tool and its arguments as
 * pretty JSON (the edit form's initial value) — or, when `user` may not decide (or it is decided, expired,
 * unknown), the private notice to show instead of the form.
 */
export type ApprovalForm =
  | { kind: "form"; toolName: string; argumentsJson: string }
  | { kind: "notice"; text: string };

/**
 * What a platform adapter's receiving side calls for each normalized event. Implemented by the gateway
 * (`src/runs`); adapters never decide anything themselves. Every method resolves when the event was
 * handled, and adapters acknowledge a platform event only then (DESIGN.md §4: acknowledged only once
 * stored). `message` retries while Redis is away and resolves even when it finally gives up (the message
 * is marked and its author told); a rejection from any method means nothing was stored, so the adapter
 * leaves the event unacknowledged for the platform to deliver again. Calls for one thread are made in
 * the order its events arrived (`ThreadSerial`).
 */
export interface ChatInbound {
  /**
   * A message that mentions the bot (or is a DM to it) by `authorId` just arrived: show that it was seen
   * (👀) now, before the adapter's lookups (author name, thread history) and before it is stored. The
   * adapter calls it at most once per message, on arrival, and hands the message over with
   * {@link ChatInbound.message} afterwards as usual; that call then reuses this acknowledgement instead of
   * reacting again. Never rejects (a failed reaction is logged). Optional: without it, `message`
   * acknowledges a mention itself.
   */
  acknowledge?(thread: ThreadRef, messageId: string, authorId: string): Promise<void>;
  /** A new user message: a mention, a DM, or a reply in a thread. */
  message(message: IncomingMessage): Promise<void>;
  /** The author edited a message (text replaced). */
  messageEdited(message: IncomingMessage): Promise<void>;
  /** The author deleted a message. */
  messageDeleted(thread: ThreadRef, messageId: string): Promise<void>;
  /** A reaction was added (or removed) on a message. */
  reaction(event: ReactionEvent): Promise<void>;
  /** An approval button was clicked (or a deny/edit form submitted). */
  button(click: ButtonClick): Promise<ButtonReply>;
  /**
   * A "Deny with reason…" / "Edit and approve…" button was clicked: may `user` decide, and what does the
   * form show? Decides nothing (the submission is checked again by {@link ChatInbound.button}). Optional
   * for test doubles; the gateway implements it.
   */
  approvalForm?(thread: ThreadRef, approvalId: string, user: ChatUser): Promise<ApprovalForm>;
  /**
   * A platform's own stop control was used by `user` (Slack's native Stop button on a working agent
   * session): handled exactly like a 🛑 from `user` — the run stops if they are its requester or an
   * approver, anyone else is told privately and nothing changes; an idle thread changes nothing. Resolves
   * with what became of it (`idle`: nothing was running, so the platform's own state — Slack's session
   * still showing "processing" — is the adapter's to settle). Optional so platforms without such a control
   * (and test doubles) need not implement it; the gateway does.
   */
  stop?(thread: ThreadRef, user: ChatUser): Promise<PlatformStopOutcome | undefined>;
}

/**
 * A platform adapter as the composition root sees it. Workers only use `outbound` (REST); the gateway also
 * calls `start` to receive events. `stop` closes connections and servers; idempotent.
 */
export interface ChatPlatform {
  readonly platform: Platform;
  readonly outbound: ChatOutbound;
  start(inbound: ChatInbound): Promise<void>;
  stop(): Promise<void>;
}
