import type { AgentEvent, AgentToolResult } from "../../agent/index.js";
import { threadId } from "../thread-ref.js";
import type { ApprovalShown, ChatDialect, ChatOutbound, RunOutcome, RunStats, ThreadRef } from "../types.js";
import { type RenderClock, systemClock } from "./clock.js";
import { formatRunFooter } from "./footer.js";
import { type LaidOutPiece, type Placement, planLayout } from "./layout-plan.js";
import { formatFailureLine, formatOutcomeLine } from "./outcome.js";
import { type RenderOperation, ReplyMessages } from "./reply-messages.js";
import { RunDocument, type ToolView } from "./run-document.js";
import { approvalStatus, runningStatus, THINKING_STATUS } from "./run-status.js";
import { MIN_SPLIT_CHARS, pieceText, planSplit } from "./split.js";
import { withToolTasks } from "./tool-parts.js";

export { approvalStatus, runningStatus, THINKING_STATUS } from "./run-status.js";

/** What a run that produced nothing visible shows. */
export const EMPTY_REPLY_MARKDOWN = "_(no reply)_";

/**
 * The line under an answer an interrupt cut short (docs/agent-loop.md, deviation 6):
 * `⚡ interrupted by <name>`.
 */
export function interruptedLine(by: string | undefined): string {
  return `⚡ _interrupted${by ? ` by ${by}` : ""}_`;
}

/** Chat messages one run's reply may use by default (the cut-off notice included). */
export const DEFAULT_REPLY_MAX_MESSAGES = 20;
/** Characters of assistant text one run's reply shows by default. */
export const DEFAULT_REPLY_MAX_CHARS = 40_000;

/** The notice that ends a reply that was cut off (shown once, in the message after the last one kept). */
export function cutOffNotice(maxMessages: number, maxChars: number): string {
  return `✂️ _The answer was cut off here: it is longer than this bot posts for one request (${maxMessages} messages or ${maxChars.toLocaleString("en-US")} characters). Nothing more is shown for this run; ask for a shorter answer or for one part at a time._`;
}

/** Options of {@link createRunRenderer}. */
export interface RunRendererOptions {
  outbound: ChatOutbound;
  thread: ThreadRef;
  /** Append the stats footer at finish. Default `true`. */
  footer?: boolean;
  /**
   * Called for every outbound call that rejected; rendering carries on. Must not throw. Default: ignore
   * (callers are expected to log).
   */
  onError?: (err: unknown, operation: RenderOperation) => void;
  /** Time and timers for throttling. Default {@link systemClock}. */
  clock?: RenderClock;
  /**
   * Most chat messages the reply may use, the cut-off notice included (at least 2). Content that would
   * need more is cut off. Default {@link DEFAULT_REPLY_MAX_MESSAGES}.
   */
  maxMessages?: number;
  /** Most characters of assistant text shown; the rest is cut off. Default {@link DEFAULT_REPLY_MAX_CHARS}. */
  maxAnswerChars?: number;
}

/** Shows one run in a chat thread. */
export interface RunRenderer {
  /**
   * Feeds one agent event, in the order the agent emitted them. Synchronous and cheap (O(1) per text
   * delta; rendering, splitting and dialect conversion happen at flush time, at most once per
   * `limits.minEditIntervalMs`); outbound failures never surface here. Events after
   * {@link RunRenderer.finish} are ignored.
   */
  handle(event: AgentEvent): void;
  /**
   * Adds the outcome line and (optionally) the footer, flushes everything, retries any message whose
   * final text did not arrive once, then ends the run on the outbound ({@link ChatOutbound.endRun}, which
   * clears the status). Resolves when done; never rejects;
   * idempotent (later calls return the first call's promise).
   */
  finish(outcome: RunOutcome, stats: RunStats): Promise<void>;
}

/**
 * Renders a run into the thread as the UX contract describes: an "is thinking…" status from the first
 * `turn_start`; one reply posted at the first visible text or tool start and edited as text streams
 * (throttled per message to `limits.minEditIntervalMs`, deltas coalesced, operations on one message
 * serialized, never an edit with unchanged content); assistant text and tool progress lines in event
 * order; a `⚠️` line for failed model calls; content beyond `limits.maxMessageChars` continued in new
 * messages (earlier ones frozen, code blocks closed and reopened across them); a user message delivered
 * mid-run (steer / follow-up) starts a new reply message below it. Markdown is converted with
 * the outbound's `dialect` when flushing. Outbound failures go to `onError` and never stop the rendering.
 *
 * A reply is bounded: once the assistant text passes `maxAnswerChars`, or the content would need more than
 * `maxMessages - 1` messages, what is shown is kept as it is, one message below it says the answer was
 * cut off ({@link cutOffNotice}), and nothing else of the run is posted except, at finish, the outcome
 * line and footer in that same message. So a run never posts more than `maxMessages` messages, and the
 * renderer's memory stays bounded however long the model streams.
 */
export function createRunRenderer(options: RunRendererOptions): RunRenderer {
  const renderer = new Renderer(options);
  return {
    handle: (event) => renderer.handle(event),
    finish: (outcome, stats) => renderer.finish(outcome, stats),
  };
}

class Renderer {
  private readonly outbound: ChatOutbound;
  private readonly thread: ThreadRef;
  private readonly clock: RenderClock;
  private readonly footer: boolean;
  private readonly onError: (err: unknown, operation: RenderOperation) => void;
  private readonly maxChars: number;
  private readonly measure: (text: string) => number;
  private readonly dialect: ChatDialect;
  /** The dialect's Markdown conversion for this run (with its memory, when the dialect has one). */
  private readonly convert: (markdown: string) => string;
  private readonly document: RunDocument;
  private readonly messages: ReplyMessages;
  private readonly maxMessages: number;
  private readonly maxAnswerChars: number;
  /** Messages content may use before the reply counts as cut off (one is kept for the notice). */
  private contentLimit: number;
  /** Index of the cut-off notice message, once the reply was cut off. */
  private cutIndex: number | undefined;
  /** Lines of the notice message after the notice itself (a later failure, then outcome and footer). */
  private failureAfterCut: string | undefined;
  private finalLines: string[] = [];
  /** Source offset up to which content sits in frozen messages. */
  private frozenOffset = 0;
  /** Messages before this index are frozen. */
  private frozenCount = 0;
  /** Opening fence the first live message repeats, when a frozen message cut a code block. */
  private carry: string | undefined;
  private dirty = false;
  private flushPending = false;
  private flushTimer: unknown;
  private statusShown = false;
  /** The status last asked for (repeats are not sent). */
  private statusText: string | null = null;
  /** Requester names of the approval cards waiting now, by card message id. */
  private readonly waitingCards = new Map<string, string>();
  /** Tool call ids this run has shown a line for. */
  private readonly seenTools = new Set<string>();
  private readonly unwatch: (() => void) | undefined;
  /** Tool calls of the last rendering, for tokens (outbounds that take tool tasks). */
  private tools: ToolView[] = [];
  private readonly tokens: boolean;
  private statusChain: Promise<void> = Promise.resolve();
  private lastFailureLine: string | undefined;
  private abortMessage: string | undefined;
  private finishing: Promise<void> | undefined;

  constructor(options: RunRendererOptions) {
    this.outbound = options.outbound;
    this.thread = options.thread;
    this.clock = options.clock ?? systemClock;
    this.footer = options.footer ?? true;
    this.onError = options.onError ?? (() => {});
    this.maxMessages = Math.max(2, Math.floor(options.maxMessages ?? DEFAULT_REPLY_MAX_MESSAGES));
    this.maxAnswerChars = Math.max(1, Math.floor(options.maxAnswerChars ?? DEFAULT_REPLY_MAX_CHARS));
    this.contentLimit = this.maxMessages - 1;
    this.document = new RunDocument(this.maxAnswerChars);
    const limits = options.outbound.limits;
    this.maxChars = Math.max(MIN_SPLIT_CHARS, limits.maxMessageChars);
    this.measure = limits.measure ?? ((text) => text.length);
    this.dialect = options.outbound.dialect;
    this.convert = this.dialect.createConverter?.() ?? ((markdown) => this.dialect.toMarkup(markdown));
    this.tokens = options.outbound.toolTasks === true;
    const key = threadId(this.thread);
    this.unwatch = options.outbound.watchApprovals?.((shown) => {
      if (threadId(shown.thread) === key) this.onApproval(shown);
    });
    this.messages = new ReplyMessages({
      outbound: this.outbound,
      thread: this.thread,
      clock: this.clock,
      minEditIntervalMs: limits.minEditIntervalMs,
      onError: (err, operation) => this.report(err, operation),
      onSettled: () => {
        if (this.dirty && this.finishing === undefined) this.requestFlush();
      },
    });
  }

  handle(event: AgentEvent): void {
    if (this.finishing !== undefined) return;
    if (this.apply(event)) {
      this.dirty = true;
      this.requestFlush();
    }
  }

  finish(outcome: RunOutcome, stats: RunStats): Promise<void> {
    this.finishing ??= this.finalize(outcome, stats);
    return this.finishing;
  }

  /** Updates the document; true when something visible changed. */
  private apply(event: AgentEvent): boolean {
    // Once the text was cut (even before the layout placed the notice) nothing more joins the content.
    if (this.cutIndex !== undefined || this.document.truncated) return this.applyAfterCut(event);
    const document = this.document;
    switch (event.type) {
      case "turn_start":
        this.statusShown = true;
        this.showPhase();
        return false;
      case "message_start": {
        const role = roleOf(event.message);
        if (role === "assistant") {
          document.startAssistantMessage();
          this.showPhase();
        } else if (role === "user") document.addBreak();
        return false;
      }
      case "message_update": {
        const update = event.assistantMessageEvent;
        if (update.type === "text_delta") return document.appendText(update.contentIndex, update.delta);
        if (update.type === "text_end") return document.endText(update.contentIndex, update.content);
        return false;
      }
      case "message_end": {
        if (roleOf(event.message) === "toolResult") return this.recoveredResult(event.message);
        if (roleOf(event.message) !== "assistant" || !("stopReason" in event.message)) return false;
        document.endAssistantMessage();
        const { stopReason, errorMessage, interrupted } = event.message;
        if (interrupted) {
          // Cut by a new message, not a failure: the answer shows where it stopped and who cut it.
          document.addLine(interruptedLine(interrupted.by));
          return true;
        }
        if (stopReason === "aborted") this.abortMessage = errorMessage ?? "";
        if (stopReason !== "error") return false;
        this.lastFailureLine = formatFailureLine(errorMessage);
        document.addLine(this.lastFailureLine);
        return true;
      }
      case "tool_execution_start":
        this.seenTools.add(event.toolCallId);
        document.startTool(event.toolCallId, event.toolName, this.clock.now());
        this.showPhase();
        return true;
      case "tool_execution_update": {
        const text = resultText(event.partialResult);
        return document.updateTool(event.toolCallId, text.trim() === "" ? undefined : text);
      }
      case "tool_execution_end": {
        const outcome = event.isError
          ? { error: resultText(event.result) }
          : event.durationMs === undefined
            ? {}
            : { durationMs: event.durationMs };
        const changed = document.endTool(event.toolCallId, outcome, this.clock.now());
        this.showPhase();
        return changed;
      }
      default:
        return false;
    }
  }

  /**
   * A tool result this run never saw start: a resumed run settling a call of the worker before it
   * (recorded result, or interrupted). It gets its final progress line here, so the reply says what became
   * of it instead of the dead worker's `🔧 name …` being the last word.
   */
  private recoveredResult(message: unknown): boolean {
    const result = message as {
      toolCallId?: unknown;
      toolName?: unknown;
      isError?: unknown;
      content?: unknown;
    };
    if (typeof result.toolCallId !== "string" || typeof result.toolName !== "string") return false;
    if (this.seenTools.has(result.toolCallId)) return false;
    this.seenTools.add(result.toolCallId);
    const now = this.clock.now();
    this.document.startTool(result.toolCallId, result.toolName, now);
    const error = result.isError === true ? resultText(result as AgentToolResult) || "failed" : undefined;
    this.document.endTool(result.toolCallId, error === undefined ? { durationMs: null } : { error }, now);
    return true;
  }

  /**
   * An approval card was posted or updated in this thread: while it waits, the run says whose approval
   * it waits for and its tool shows as waiting; content from now on goes below the card.
   */
  private onApproval(shown: ApprovalShown): void {
    if (this.finishing !== undefined) return;
    const { card } = shown;
    const waiting = card.state.kind === "pending";
    const known = this.waitingCards.has(shown.messageId);
    if (waiting) this.waitingCards.set(shown.messageId, card.requesterName);
    else this.waitingCards.delete(shown.messageId);
    let changed = false;
    if (this.cutIndex === undefined && !this.document.truncated) {
      const details = waiting ? `waiting for ${card.requesterName}'s approval` : undefined;
      changed = this.document.setAwaitingApproval(card.toolName, waiting, details);
      // The card sits below everything shown so far: what follows goes into a new message under it.
      if (waiting && !known) this.document.addBreak();
    }
    this.showPhase();
    if (changed) {
      this.dirty = true;
      this.requestFlush();
    }
  }

  /** Shows what the run does now: waiting for an approval, running tools, or thinking. */
  private showPhase(): void {
    if (!this.statusShown) return;
    const approver = [...this.waitingCards.values()][0];
    const running = this.document.runningTools;
    const status =
      approver !== undefined
        ? approvalStatus(approver)
        : running.length > 0
          ? runningStatus(running)
          : THINKING_STATUS;
    if (status !== this.statusText) this.setStatus(status);
  }

  /** After the cut only how model calls end is kept (for the notice message); true when it changed. */
  private applyAfterCut(event: AgentEvent): boolean {
    if (event.type !== "message_end" || roleOf(event.message) !== "assistant") return false;
    if (!("stopReason" in event.message)) return false;
    const { stopReason, errorMessage, interrupted } = event.message;
    if (stopReason === "aborted" && !interrupted) this.abortMessage = errorMessage ?? "";
    if (stopReason !== "error") return false;
    this.lastFailureLine = formatFailureLine(errorMessage);
    this.failureAfterCut = this.lastFailureLine;
    return true;
  }

  /** Schedules a flush at the first moment the last message may change (never two pending). */
  private requestFlush(): void {
    if (this.flushPending || !this.document.hasVisibleContent || this.messages.anyInFlight) return;
    this.flushPending = true;
    const delay = this.messages.lastNextAllowedAt - this.clock.now();
    if (delay > 0) {
      this.flushTimer = this.clock.setTimeout(() => this.flush(), delay);
    } else {
      queueMicrotask(() => this.flush());
    }
  }

  private flush(): void {
    this.flushPending = false;
    this.flushTimer = undefined;
    if (this.finishing === undefined) this.layout();
  }

  /** Renders the document and hands every message its text; the heavy part, done once per flush. */
  private layout(): void {
    this.dirty = false;
    if (this.cutIndex !== undefined) {
      this.placeNotice();
      return;
    }
    const placement = this.plan(this.contentLimit);
    this.commit(placement);
    if (placement.overflow || this.document.truncated) this.cutOff(placement.end);
  }

  /** Where the document's content goes (see {@link planLayout}); touches no message. */
  private plan(limit: number): Placement {
    const rendered = this.document.render(this.tokens);
    this.tools = rendered.tools;
    return planLayout(
      rendered,
      { frozenCount: this.frozenCount, frozenOffset: this.frozenOffset, carry: this.carry },
      (text) => this.layoutPieces(text),
      limit,
    );
  }

  /** Hands the planned texts to the messages (messages past the content are emptied) and keeps the state. */
  private commit(placement: Placement): void {
    for (const [index, text] of placement.texts.entries())
      if (text !== undefined) this.messages.set(index, text, placement.parts[index]);
    if (!placement.overflow) {
      for (let index = placement.end; index < this.messages.count; index++) this.messages.set(index, "");
    }
    this.frozenCount = placement.frozenCount;
    this.frozenOffset = placement.frozenOffset;
    this.carry = placement.carry;
  }

  /** Keeps what is shown as it is and adds the cut-off notice below it; nothing else is posted after. */
  private cutOff(contentEnd: number): void {
    this.cutIndex = Math.min(contentEnd, this.maxMessages - 1);
    this.placeNotice();
  }

  /** The notice message: the notice, a failure that came after the cut, the outcome and the footer. */
  private placeNotice(): void {
    const index = this.cutIndex!;
    const lines = [cutOffNotice(this.maxMessages, this.maxAnswerChars)];
    if (this.failureAfterCut !== undefined) lines.push(this.failureAfterCut);
    lines.push(...this.finalLines);
    const text = truncate(tidy(this.convert(lines.join("\n\n"))), this.maxChars, this.measure);
    this.messages.set(index, text);
    for (let later = index + 1; later < this.messages.count; later++) this.messages.set(later, "");
  }

  /** Splits and converts; shrinks the split budget when the dialect made a part longer than allowed. */
  private layoutPieces(text: string): LaidOutPiece[] {
    let budget = this.maxChars;
    for (;;) {
      const plan = planSplit(text, budget);
      const pieces = plan.map((piece, index) => ({
        ...(this.tokens
          ? withToolTasks(tidy(this.convert(pieceText(text, piece))), this.tools, this.convert)
          : { text: tidy(this.convert(pieceText(text, piece))), parts: undefined }),
        end: piece.end,
        nextReopen: plan[index + 1]?.reopen,
      }));
      const longest = Math.max(...pieces.map((piece) => this.measure(piece.text)));
      if (longest <= this.maxChars || budget <= MIN_SPLIT_CHARS) {
        return pieces
          .filter((piece) => piece.text !== "")
          .map((piece) => ({ ...piece, text: truncate(piece.text, this.maxChars, this.measure) }));
      }
      const shrunk = Math.floor(((budget * this.maxChars) / longest) * 0.95);
      budget = Math.max(MIN_SPLIT_CHARS, Math.min(budget - 1, shrunk));
    }
  }

  private async finalize(outcome: RunOutcome, stats: RunStats): Promise<void> {
    if (this.flushTimer !== undefined) this.clock.clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    const document = this.document;
    document.endAssistantMessage();
    // A tool still running when the run ends was cut by the stop or the hand-over: its line says so.
    const user = outcome.kind === "stopped" && outcome.reason === undefined;
    document.endRunningTools(user ? "stopped" : "interrupted", this.clock.now());
    const lines: string[] = [];
    if (this.abortMessage !== undefined && outcome.kind !== "stopped") {
      lines.push(formatFailureLine(this.abortMessage || "The request was interrupted."));
    }
    const outcomeLine = formatOutcomeLine(outcome);
    if (outcomeLine !== undefined && outcomeLine !== this.lastFailureLine) lines.push(outcomeLine);
    if (this.cutIndex === undefined && !document.truncated && !this.plan(this.contentLimit).overflow) {
      for (const line of lines) document.addLine(line);
      if (!document.hasVisibleContent) document.addLine(EMPTY_REPLY_MARKDOWN);
      if (this.footer) document.addLine(this.footerLine(stats));
      // The closing lines are short: they may use the message kept for the notice.
      this.contentLimit = this.maxMessages;
    } else {
      // The content is cut off (or is about to be): the closing lines go below the notice.
      this.finalLines = this.footer ? [...lines, this.footerLine(stats)] : lines;
    }
    this.layout();
    await this.messages.whenIdle();
    await this.messages.retryUnsynced();
    this.messages.dispose();
    this.unwatch?.();
    if (this.statusShown) this.endRun();
    await this.statusChain;
  }

  /** The footer as the dialect's secondary text ({@link ChatDialect.subtext}). */
  private footerLine(stats: RunStats): string {
    return this.dialect.subtext(formatRunFooter(stats));
  }

  /** Status updates are chained so a clear never overtakes the set. */
  private setStatus(status: string | null): void {
    this.statusText = status;
    this.statusChain = this.statusChain.then(() =>
      this.outbound.setStatus(this.thread, status).catch((err: unknown) => this.report(err, "setStatus")),
    );
  }

  /** The run's last outbound call, after every status change (it clears the status too). */
  private endRun(): void {
    this.statusText = null;
    this.statusChain = this.statusChain.then(() =>
      this.outbound.endRun(this.thread).catch((err: unknown) => this.report(err, "endRun")),
    );
  }

  private report(err: unknown, operation: RenderOperation): void {
    try {
      this.onError(err, operation);
    } catch {
      // onError must not throw; a throwing logger must not break the rendering either.
    }
  }
}

function roleOf(message: unknown): unknown {
  return typeof message === "object" && message !== null ? (message as { role?: unknown }).role : undefined;
}

function resultText(result: AgentToolResult): string {
  return result.content
    .filter((block) => block.type === "text")
    .map((block) => block.text)
    .join("\n");
}

/** Drops leading blank lines and trailing whitespace (platforms ignore them; comparing stays exact). */
function tidy(text: string): string {
  return text.replace(/^(?:[ \t]*\n)+/, "").trimEnd();
}

/** `text` within `maxChars` as `measure` counts (an ellipsis marks a cut). */
function truncate(text: string, maxChars: number, measure: (text: string) => number): string {
  if (measure(text) <= maxChars) return text;
  let end = Math.min(text.length, maxChars);
  while (end > 0 && measure(`${text.slice(0, end)}…`) > maxChars) end = Math.floor(end * 0.9);
  return `${text.slice(0, end)}…`;
}
