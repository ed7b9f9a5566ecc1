import type { AssistantMessage } from "../agent/index.js";

/**
 * A chat platform's name, chosen by its adapter (lowercase letters, digits and dashes, e.g. the name of
 * its folder in `src/`). Open on purpose: a new platform adds an adapter folder, not a member here.
 */
export type Platform = string;

/**
 * Where a conversation lives. One thread is one agent transcript. Each adapter says what its parts
 * hold (e.g. workspace = a team or server id, channel = the channel id, thread = the root message or
 * thread id).
 */
export interface ThreadRef {
  platform: Platform;
  workspace: string;
  channel: string;
  thread: string;
}

/** Someone in a chat. `name` is the display name shown to the model. */
export interface ChatUser {
  id: string;
  name: string;
  isBot?: boolean;
}

/** A file shared with a message; listed to the agent, not downloaded. */
export interface Attachment {
  name: string;
  url?: string;
  mimeType?: string;
  sizeBytes?: number;
}

/** A user message as the gateway normalizes it from any platform. */
export interface IncomingMessage {
  /** Platform message id, unique within the thread; the dedupe key for retries and replays. */
  id: string;
  thread: ThreadRef;
  author: ChatUser;
  text: string;
  attachments: Attachment[];
  /** True when the message mentions the bot (or is a DM to it). */
  mentionsBot: boolean;
  /** When the platform says the message was sent (ms since epoch). */
  sentAt: number;
  /**
   * Earlier messages of the thread that the bot has not seen, oldest first (a mention inside an existing
   * thread). They reach the model once, as context before `text`, in the message that carries them.
   */
  history?: HistoryMessage[];
}

/** An earlier message of a thread, given to the agent as context. */
export interface HistoryMessage {
  author: ChatUser;
  text: string;
  /** ms since epoch. */
  sentAt: number;
}

/** A reaction added to or removed from a message. `emoji` is the configured emoji *name*. */
export interface ReactionEvent {
  thread: ThreadRef;
  messageId: string;
  user: ChatUser;
  emoji: string;
  added: boolean;
}

/**
 * What an approval button asks for. `always` allows the tool in this thread for the run's requester;
 * `alwaysThread` (approvers only) allows it for everyone in the thread.
 */
export type ApprovalDecision = "approve" | "deny" | "always" | "alwaysThread";

/** A click on an approval card's button. */
export interface ButtonClick {
  thread: ThreadRef;
  approvalId: string;
  decision: ApprovalDecision;
  user: ChatUser;
  /** Why a denial was made (a platform form): reaches the model; ignored for other decisions. */
  reason?: string;
  /**
   * "Edit and approve": the approver's corrected arguments as typed in the form (a JSON object). Only with
   * decision `approve`; the gateway validates it against the tool's schema before deciding, and the call
   * then runs with the edited arguments.
   */
  editedArguments?: string;
}

/** A message the bot posted. */
export interface PostedMessage {
  id: string;
}

/** Lifecycle of an approval card as shown in the chat. */
export type ApprovalCardState =
  | { kind: "pending"; waitingMessages: number }
  | {
      kind: "approved";
      by: ChatUser;
      at: number;
      /** True when the tool is now always allowed (see `scope`). */
      always: boolean;
      /** Who an "always" covers: the requester (default) or everyone in the thread. */
      scope?: "requester" | "thread";
      /** Edit and approve: the changed fields, one compact `field: before → after` line each. */
      changes?: string[];
    }
  /** `reason`: what the denier wrote (deny with a reason), shown on the card. */
  | { kind: "denied"; by: ChatUser; at: number; reason?: string }
  | { kind: "expired"; at: number }
  | { kind: "cancelled"; reason: string };

/** Everything a platform needs to draw an approval card. */
export interface ApprovalCard {
  approvalId: string;
  toolName: string;
  /** Arguments rendered readably (already truncated with a note when huge). */
  argumentsText: string;
  /** Display names (or mentions) of who may decide. */
  approvers: string[];
  /** Display name of the run's requester: "Always allow" covers them only, and the button says so. */
  requesterName: string;
  /** When the call is denied as timed out (ms since epoch); 0 when the tool's card has no time limit. */
  expiresAt: number;
  state: ApprovalCardState;
}

/**
 * How a platform writes text, brought by its adapter through {@link ChatOutbound.dialect} (each adapter
 * defines its own next to its outbound; the renderer never asks which platform it is). Every method is
 * pure and deterministic and never throws.
 */
export interface ChatDialect {
  /** Converts model Markdown into the platform's markup (the identity for a platform that speaks Markdown). */
  toMarkup(markdown: string): string;
  /**
   * Optional: a converter for one run, with the results of {@link ChatDialect.toMarkup} but memory for text
   * that is converted again and again as it grows. Default: `toMarkup`.
   */
  createConverter?(): (markdown: string) => string;
  /** Plain text (a name, a reason) as markup that shows it literally. */
  escape(text: string): string;
  /** Text inside a code block or inline code, as the platform needs it there. */
  escapeCode(text: string): string;
  /** Bold markup around already escaped text. */
  bold(text: string): string;
  /**
   * The Markdown line (converted with {@link ChatDialect.toMarkup} like every line of a reply) that the
   * platform shows as small secondary text: the run footer.
   */
  subtext(text: string): string;
  /**
   * A point in time in markup: `relative` reads after "Expires" (e.g. `at 12:00 UTC`, `in 5 minutes`),
   * `absolute` after a name and a comma. Native timestamps render in the reader's time zone.
   */
  timestamp(ms: number, style: "relative" | "absolute"): string;
  /**
   * Markup that mentions the platform user `userId`; `name`, their display name when known, is what a
   * platform without mention markup (the playground) shows instead of the id.
   */
  mention(userId: string, name?: string): string;
}

/** Platform limits the renderer respects. */
export interface OutboundLimits {
  /** Longest message text the platform accepts, in characters (or in the unit of `measure`). */
  maxMessageChars: number;
  /** Minimum interval between edits of one message, in ms. */
  minEditIntervalMs: number;
  /**
   * How the platform measures a message against `maxMessageChars` (e.g. UTF-8 bytes). Default: the
   * UTF-16 length. The renderer shrinks its split budget until every part measures within the limit.
   */
  measure?: (text: string) => number;
}

/** A tool call as a platform's native task card shows it (Slack's `task_update` stream chunk). */
export interface ToolTask {
  /** Stable per call (the tool call id); later states of the same call carry the same id. */
  id: string;
  /** The tool's name. */
  title: string;
  /** `pending`: waiting for an approval; `in_progress`: running; then `complete` or `error`. */
  status: "pending" | "in_progress" | "complete" | "error";
  /** What the tool last reported through `onUpdate` (or what it waits for), one short line. */
  details?: string;
  /** A failed call's error, one short line. */
  output?: string;
}

/** One part of a reply message in order: converted text (the outbound's {@link ChatDialect}) or a tool's task. */
export type ReplyPart = { kind: "text"; text: string } | { kind: "task"; task: ToolTask };

/** An approval card posted or updated through an outbound that {@link ChatOutbound.watchApprovals}. */
export interface ApprovalShown {
  thread: ThreadRef;
  messageId: string;
  card: ApprovalCard;
}

/**
 * The few operations a worker needs to show a run in a chat. Implementations are REST clients (no
 * gateway connection). Every method may reject with a platform error; callers log and carry on.
 */
/**
 * The methods every {@link ChatOutbound} has, in declaration order (the optional extras such as `toolTasks`
 * are not listed). Wrappers that intercept every call (tracing, recording doubles) iterate this list.
 */
export const CHAT_OUTBOUND_METHODS = [
  "post",
  "edit",
  "delete",
  "react",
  "unreact",
  "setStatus",
  "endRun",
  "postApproval",
  "updateApproval",
  "notify",
] as const;

export interface ChatOutbound {
  readonly limits: OutboundLimits;
  /** How the platform writes text: the renderer converts Markdown with it and draws cards' text in it. */
  readonly dialect: ChatDialect;
  /**
   * True when the outbound shows tool calls as native task cards: the renderer then passes `parts`
   * to {@link ChatOutbound.post} / {@link ChatOutbound.edit} (the same content as `text`, with each
   * progress line as a {@link ToolTask}). Default: absent (progress lines only).
   */
  readonly toolTasks?: boolean;
  /**
   * Posts a reply message. `parts` (only when {@link ChatOutbound.toolTasks}) is `text` in structured
   * form; an outbound that cannot use it shows `text`.
   */
  post(thread: ThreadRef, text: string, parts?: ReplyPart[]): Promise<PostedMessage>;
  /** Replaces the text of a message the bot posted (`parts` as in {@link ChatOutbound.post}). */
  edit(thread: ThreadRef, messageId: string, text: string, parts?: ReplyPart[]): Promise<void>;
  delete(thread: ThreadRef, messageId: string): Promise<void>;
  /** Adds the bot's reaction; adding one that is already there is not an error. */
  react(thread: ThreadRef, messageId: string, emoji: string): Promise<void>;
  /** Removes the bot's reaction; removing one that is not there is not an error. */
  unreact(thread: ThreadRef, messageId: string, emoji: string): Promise<void>;
  /**
   * Shows (or with `null` clears) a typing / "is thinking…" indicator. Only the indicator: clearing it
   * does not end the run's reply (see {@link ChatOutbound.endRun}).
   */
  setStatus(thread: ThreadRef, status: string | null): Promise<void>;
  /**
   * The run in `thread` ended: its reply is final. Clears the status and finishes the reply the way the
   * platform needs (Slack stops open streams and adds the feedback buttons, Discord reposts an edited
   * last message so readers are notified). The renderer's last call of a run that showed a status;
   * nothing is posted or edited for that run after it. Calling it for a thread with no run shown is
   * harmless.
   */
  endRun(thread: ThreadRef): Promise<void>;
  postApproval(thread: ThreadRef, card: ApprovalCard): Promise<PostedMessage>;
  updateApproval(thread: ThreadRef, messageId: string, card: ApprovalCard): Promise<void>;
  /** A notice only `userId` sees (Slack ephemeral, Discord ephemeral reply); may fall back to a DM. */
  notify(thread: ThreadRef, userId: string, text: string): Promise<void>;
  /**
   * Optional: posts `text` so that its mentions of `userIds` notify them (the approval reminder), where a
   * plain {@link ChatOutbound.post} notifies nobody (Discord's). Without it, `post` is used.
   */
  postNotifying?(thread: ThreadRef, text: string, userIds: string[]): Promise<PostedMessage>;
  /**
   * Subscribes to the approval cards posted or updated through this object (after the call resolved),
   * in call order; returns the unsubscribe function. Listeners must not throw. Optional: see
   * `watchApprovals` (src/chat), which adds it to any outbound; without it, the renderer cannot place
   * text below a card or say that the run waits for one.
   */
  watchApprovals?(listener: (shown: ApprovalShown) => void): () => void;
  /**
   * Optional: resolves once the writes this outbound makes in the background (those no run waits for,
   * such as Slack's agent-session statuses) are sent or given up on. A worker awaits it, for a bounded
   * time, before it closes its connections. Never rejects.
   */
  settled?(): Promise<void>;
}

/** How a run ended, as the chat shows it. */
export type RunOutcome =
  | { kind: "completed" }
  | { kind: "stopped"; by: ChatUser | undefined; reason?: string }
  | { kind: "budget"; reason: string }
  | { kind: "failed"; message: string };

/** Figures for the run footer. */
export interface RunStats {
  turns: number;
  toolCalls: number;
  inputTokens: number;
  outputTokens: number;
  /** Present when prices are configured. */
  cost?: number;
}

/** The last assistant message's failure, in words for the chat. */
export type AssistantFailure = Pick<AssistantMessage, "stopReason" | "errorMessage">;
