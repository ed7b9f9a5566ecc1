import type { AgentEvent, AgentToolResult } from "../../agent/index.js";
import type { ChatOutbound, RunOutcome, RunStats, ThreadRef } from "../types.js";
import { type RenderClock, systemClock } from "./clock.js";
import { formatRunFooter } from "./footer.js";
import { createDialectConverter, type DialectConverter } from "./markdown.js";
import { formatFailureLine, formatOutcomeLine } from "./outcome.js";
import { type RenderOperation, ReplyMessages } from "./reply-messages.js";
import { RunDocument } from "./run-document.js";
import { MIN_SPLIT_CHARS, pieceText, planSplit } from "./split.js";

/** The status shown from the first turn until the run finishes. */
export const THINKING_STATUS = "is thinking…";

/** What a run that produced nothing visible shows. */
export const EMPTY_REPLY_MARKDOWN = "_(no reply)_";

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
   * final text did not arrive once, then clears the status. Resolves when done; never rejects;
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
 * mid-run (steer / follow-up) starts a new reply message below it. Markdown is converted to
 * `limits.dialect` when flushing. Outbound failures go to `onError` and never stop the rendering.
 */
export function createRunRenderer(options: RunRendererOptions): RunRenderer {
  const renderer = new Renderer(options);
  return {
    handle: (event) => renderer.handle(event),
    finish: (outcome, stats) => renderer.finish(outcome, stats),
  };
}

interface LaidOutPiece {
  text: string;
  /** End offset of the piece in the laid-out text. */
  end: number;
  /** The fence the following piece reopens, if the piece cut a code block. */
  nextReopen: string | undefined;
}

class Renderer {
  private readonly outbound: ChatOutbound;
  private readonly thread: ThreadRef;
  private readonly clock: RenderClock;
  private readonly footer: boolean;
  private readonly onError: (err: unknown, operation: RenderOperation) => void;
  private readonly maxChars: number;
  private readonly measure: (text: string) => number;
  private readonly converter: DialectConverter;
  private readonly document = new RunDocument();
  private readonly messages: ReplyMessages;
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
    const limits = options.outbound.limits;
    this.maxChars = Math.max(MIN_SPLIT_CHARS, limits.maxMessageChars);
    this.measure = limits.measure ?? ((text) => text.length);
    this.converter = createDialectConverter(limits.dialect);
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
    const document = this.document;
    switch (event.type) {
      case "turn_start":
        if (!this.statusShown) {
          this.statusShown = true;
          this.setStatus(THINKING_STATUS);
        }
        return false;
      case "message_start": {
        const role = roleOf(event.message);
        if (role === "assistant") document.startAssistantMessage();
        else if (role === "user") document.addBreak();
        return false;
      }
      case "message_update": {
        const update = event.assistantMessageEvent;
        if (update.type === "text_delta") return document.appendText(update.contentIndex, update.delta);
        if (update.type === "text_end") return document.endText(update.contentIndex, update.content);
        return false;
      }
      case "message_end": {
        if (roleOf(event.message) !== "assistant" || !("stopReason" in event.message)) return false;
        document.endAssistantMessage();
        const { stopReason, errorMessage } = event.message;
        if (stopReason === "aborted") this.abortMessage = errorMessage ?? "";
        if (stopReason !== "error") return false;
        this.lastFailureLine = formatFailureLine(errorMessage);
        document.addLine(this.lastFailureLine);
        return true;
      }
      case "tool_execution_start":
        document.startTool(event.toolCallId, event.toolName, this.clock.now());
        return true;
      case "tool_execution_end": {
        const outcome = event.isError
          ? { error: resultText(event.result) }
          : event.durationMs === undefined
            ? {}
            : { durationMs: event.durationMs };
        return document.endTool(event.toolCallId, outcome, this.clock.now());
      }
      default:
        return false;
    }
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
    const rendered = this.document.render();
    for (const end of rendered.breaks) {
      if (end > this.frozenOffset) this.place(rendered.markdown.slice(this.frozenOffset, end), true, end);
    }
    const live = rendered.markdown.slice(this.frozenOffset);
    this.place(live, false, rendered.runningFrom);
  }

  /**
   * Lays out `segment` (the source from the frozen offset on) into messages from the first live one.
   * With `freezeAll` every resulting message is frozen and `limit` is the segment's end offset; otherwise
   * all but the last are frozen as long as they end before `limit` (the first running tool's line).
   */
  private place(segment: string, freezeAll: boolean, limit: number): void {
    const prefix = this.carry === undefined ? "" : `${this.carry}\n`;
    const pieces = segment.trim() === "" ? [] : this.layoutPieces(prefix + segment);
    for (const [index, piece] of pieces.entries()) this.messages.set(this.frozenCount + index, piece.text);
    if (freezeAll) {
      this.frozenCount += pieces.length;
      this.frozenOffset = limit;
      this.carry = undefined;
      return;
    }
    for (let index = this.frozenCount + pieces.length; index < this.messages.count; index++) {
      this.messages.set(index, "");
    }
    let frozen = 0;
    let offset = this.frozenOffset;
    let carry = this.carry;
    for (const piece of pieces.slice(0, -1)) {
      const end = this.frozenOffset + Math.max(0, piece.end - prefix.length);
      if (end > limit) break;
      frozen++;
      offset = end;
      carry = piece.nextReopen;
    }
    this.frozenCount += frozen;
    this.frozenOffset = offset;
    this.carry = carry;
  }

  /** Splits and converts; shrinks the split budget when the dialect made a part longer than allowed. */
  private layoutPieces(text: string): LaidOutPiece[] {
    let budget = this.maxChars;
    for (;;) {
      const plan = planSplit(text, budget);
      const pieces = plan.map((piece, index) => ({
        text: tidy(this.converter.convert(pieceText(text, piece))),
        end: piece.end,
        nextReopen: plan[index + 1]?.reopen,
      }));
      const longest = Math.max(...pieces.map((piece) => this.measure(piece.text)));
      if (longest <= this.maxChars || budget <= MIN_SPLIT_CHARS) {
        return pieces
          .filter((piece) => piece.text !== "")
          .map((piece) => ({ ...piece, text: truncate(piece.text, this.maxChars) }));
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
    if (this.abortMessage !== undefined && outcome.kind !== "stopped") {
      document.addLine(formatFailureLine(this.abortMessage || "The request was interrupted."));
    }
    const outcomeLine = formatOutcomeLine(outcome);
    if (outcomeLine !== undefined && outcomeLine !== this.lastFailureLine) document.addLine(outcomeLine);
    if (!document.hasVisibleContent) document.addLine(EMPTY_REPLY_MARKDOWN);
    if (this.footer) document.addLine(this.footerLine(stats));
    this.layout();
    await this.messages.whenIdle();
    await this.messages.retryUnsynced();
    this.messages.dispose();
    if (this.statusShown) this.setStatus(null);
    await this.statusChain;
  }

  private footerLine(stats: RunStats): string {
    const footer = formatRunFooter(stats);
    return this.converter.dialect === "discord" ? `-# ${footer}` : `_${footer}_`;
  }

  /** Status updates are chained so a clear never overtakes the set. */
  private setStatus(status: string | null): void {
    this.statusChain = this.statusChain.then(() =>
      this.outbound.setStatus(this.thread, status).catch((err: unknown) => this.report(err, "setStatus")),
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

function truncate(text: string, maxChars: number): string {
  return text.length <= maxChars ? text : `${text.slice(0, maxChars - 1)}…`;
}
