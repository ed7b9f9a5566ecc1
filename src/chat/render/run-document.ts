import { unclosedFence } from "./markdown-lines.js";
import { formatToolLine, type ToolProgress } from "./progress.js";

/** A tool call as the document holds it (see {@link RenderedRun.tools}). */
export interface ToolView {
  id: string;
  name: string;
  progress: ToolProgress;
  /** The tool's latest `onUpdate` text, or what it waits for (an approval); one short line. */
  details: string | undefined;
  /** True while an approval card for this call waits. */
  awaitingApproval: boolean;
}

/** Marks where tool `n` stands in a rendering with tokens: `TOOL_TOKEN_OPEN + n + TOOL_TOKEN_CLOSE`. */
export const TOOL_TOKEN_OPEN = "\uE000";
/** See {@link TOOL_TOKEN_OPEN}. */
export const TOOL_TOKEN_CLOSE = "\uE001";

/** The Markdown of a run so far, with what the renderer needs to place it in messages. */
export interface RenderedRun {
  markdown: string;
  /** Offset of the first progress line of a still-running tool (`markdown.length` when none runs). */
  runningFrom: number;
  /** Offsets where a new message must begin (a user message reached the agent mid-run), ascending. */
  breaks: number[];
  /** The tool calls in order; with `tokens`, tool `n` is rendered as a token instead of its line. */
  tools: ToolView[];
}

type Block =
  | { kind: "text"; chunks: string[]; complete: boolean; close: string | undefined }
  | ({ kind: "tool"; startedAt: number } & ToolView)
  | { kind: "line"; text: string }
  | { kind: "break" };

/**
 * The visible content of one run in order: assistant text segments, tool progress lines and notice
 * lines. Mutations are O(1) (text deltas are kept as chunks and joined only by {@link RunDocument.render}).
 * The rendering only ever grows at the end, except for progress lines of running tools, so a prefix that
 * ends before {@link RenderedRun.runningFrom} never changes.
 */
export class RunDocument {
  private readonly blocks: Block[] = [];
  /** Characters of assistant text held (the cap counts them). */
  private textChars = 0;
  private cut = false;

  /** `maxTextChars`: assistant text beyond this many characters is dropped and {@link truncated} set. */
  constructor(private readonly maxTextChars = Number.POSITIVE_INFINITY) {}

  /** True once assistant text was dropped because it went past `maxTextChars`; no text is added after. */
  get truncated(): boolean {
    return this.cut;
  }

  /** Text blocks of the assistant message being streamed, by content index. */
  private current = new Map<number, Extract<Block, { kind: "text" }>>();
  private readonly tools = new Map<string, Extract<Block, { kind: "tool" }>>();
  private visible = false;

  /** True once anything visible was added (the moment to post the reply). */
  get hasVisibleContent(): boolean {
    return this.visible;
  }

  /** A new assistant message starts; its text blocks are addressed by content index. */
  startAssistantMessage(): void {
    this.completeText();
    this.current = new Map();
  }

  /**
   * Appends streamed text. Returns true when it is visible (not only whitespace), or when it went past
   * the cap (the part that fits is kept; later text is ignored).
   */
  appendText(contentIndex: number, delta: string): boolean {
    if (this.cut) return false;
    const kept = this.fit(delta, this.textChars);
    const block = this.textBlock(contentIndex);
    block.chunks.push(kept);
    this.textChars += kept.length;
    if (this.cut) return true;
    if (kept.trim() === "") return false;
    this.visible = true;
    return true;
  }

  /**
   * Replaces a text block with its final content (within the cap) and closes a fence the model left
   * open. Ignored once the text was cut.
   */
  endText(contentIndex: number, content: string): boolean {
    if (this.cut) return false;
    const block = this.textBlock(contentIndex);
    const previous = block.chunks.join("");
    const kept = this.fit(content, this.textChars - previous.length);
    const changed = previous !== kept;
    block.chunks = [kept];
    this.textChars += kept.length - previous.length;
    this.complete(block);
    if (kept.trim() !== "") this.visible = true;
    return changed || this.cut;
  }

  /** The assistant message ended: its text blocks are final. */
  endAssistantMessage(): void {
    this.completeText();
  }

  /** A tool started: adds its `🔧 name …` line. */
  startTool(toolCallId: string, name: string, now: number): void {
    this.completeText();
    const block: Block = {
      kind: "tool",
      id: toolCallId,
      name,
      progress: { state: "running" },
      startedAt: now,
      details: undefined,
      awaitingApproval: false,
    };
    this.tools.set(toolCallId, block);
    this.blocks.push(block);
    this.visible = true;
  }

  /** A running tool reported progress (or waits): `details` is shown with it. False when nothing changed. */
  updateTool(toolCallId: string, details: string | undefined): boolean {
    const block = this.tools.get(toolCallId);
    if (block === undefined || block.details === details) return false;
    block.details = details;
    return true;
  }

  /**
   * Marks the running calls of `toolName` that have reported nothing yet as waiting for an approval
   * (`waiting` true) or as no longer waiting. Returns true when something visible changed.
   */
  setAwaitingApproval(toolName: string, waiting: boolean, details: string | undefined): boolean {
    let changed = false;
    for (const block of this.tools.values()) {
      if (block.name !== toolName || block.awaitingApproval === waiting) continue;
      if (waiting && block.details !== undefined) continue;
      block.awaitingApproval = waiting;
      block.details = details;
      changed = true;
    }
    return changed;
  }

  /** Names of the tools running now, in start order (duplicates kept once). */
  get runningTools(): string[] {
    return [
      ...new Set([...this.tools.values()].filter((tool) => !tool.awaitingApproval).map((tool) => tool.name)),
    ];
  }

  /**
   * A tool finished. `durationMs` defaults to the time since {@link RunDocument.startTool}; `null` means
   * unknown (none is shown). Returns false for an unknown call id.
   */
  endTool(toolCallId: string, outcome: { error?: string; durationMs?: number | null }, now: number): boolean {
    const block = this.tools.get(toolCallId);
    if (block === undefined) return false;
    const durationMs =
      outcome.durationMs === null ? undefined : (outcome.durationMs ?? now - block.startedAt);
    block.progress =
      outcome.error !== undefined
        ? { state: "failed", error: outcome.error }
        : durationMs === undefined
          ? { state: "succeeded" }
          : { state: "succeeded", durationMs };
    block.details = undefined;
    block.awaitingApproval = false;
    this.tools.delete(toolCallId);
    return true;
  }

  /**
   * Ends every tool still running as failed with `reason` (a run that ends, or hands over to another
   * worker, never leaves a `🔧 name …` line behind). Returns true when a line changed.
   */
  endRunningTools(reason: string, now: number): boolean {
    const running = [...this.tools.keys()];
    for (const id of running) this.endTool(id, { error: reason }, now);
    return running.length > 0;
  }

  /** Adds a line of its own (a notice, the outcome, the footer). */
  addLine(markdown: string): void {
    this.completeText();
    this.blocks.push({ kind: "line", text: markdown });
    this.visible = true;
  }

  /** Content added from now on goes to a new message (only once something is visible; idempotent). */
  addBreak(): void {
    this.completeText();
    if (!this.visible || this.blocks.at(-1)?.kind === "break") return;
    this.blocks.push({ kind: "break" });
  }

  /**
   * The Markdown so far. Consecutive progress lines are separated by one newline, blocks by a blank line.
   * With `tokens`, each progress line is replaced by its tool's token (see {@link TOOL_TOKEN_OPEN}).
   */
  render(tokens = false): RenderedRun {
    let markdown = "";
    let previous: Block["kind"] | undefined;
    let runningFrom: number | undefined;
    const breaks: number[] = [];
    const tools: ToolView[] = [];
    for (const block of this.blocks) {
      if (block.kind === "break") {
        breaks.push(markdown.length);
        previous = undefined;
        continue;
      }
      let text: string;
      if (block.kind === "tool") {
        text = tokens ? `${TOOL_TOKEN_OPEN}${tools.length}${TOOL_TOKEN_CLOSE}` : this.renderBlock(block);
        tools.push({
          id: block.id,
          name: block.name,
          progress: block.progress,
          details: block.details,
          awaitingApproval: block.awaitingApproval,
        });
      } else {
        text = this.renderBlock(block);
      }
      if (text === "") continue;
      if (previous !== undefined) markdown += previous === "tool" && block.kind === "tool" ? "\n" : "\n\n";
      if (block.kind === "tool" && block.progress.state === "running") runningFrom ??= markdown.length;
      markdown += text;
      previous = block.kind;
    }
    return { markdown, runningFrom: runningFrom ?? markdown.length, breaks, tools };
  }

  private renderBlock(block: Exclude<Block, { kind: "break" }>): string {
    switch (block.kind) {
      case "text": {
        if (block.chunks.length > 1) block.chunks = [block.chunks.join("")];
        const text = (block.chunks[0] ?? "").trim();
        return block.close === undefined || text === "" ? text : `${text}\n${block.close}`;
      }
      case "tool":
        return formatToolLine(block.name, block.progress, block.details);
      case "line":
        return block.text;
    }
  }

  /** The part of `text` that fits after `held` characters; sets the cut when something is dropped. */
  private fit(text: string, held: number): string {
    const room = this.maxTextChars - held;
    if (text.length <= room) return text;
    this.cut = true;
    let end = Math.max(0, room);
    const code = text.charCodeAt(end - 1);
    if (code >= 0xd800 && code <= 0xdbff) end--;
    return text.slice(0, end);
  }

  private textBlock(contentIndex: number): Extract<Block, { kind: "text" }> {
    let block = this.current.get(contentIndex);
    if (block === undefined) {
      block = { kind: "text", chunks: [], complete: false, close: undefined };
      this.current.set(contentIndex, block);
      this.blocks.push(block);
    }
    return block;
  }

  private completeText(): void {
    for (const block of this.current.values()) this.complete(block);
  }

  private complete(block: Extract<Block, { kind: "text" }>): void {
    if (block.complete) return;
    block.complete = true;
    if (block.chunks.length > 1) block.chunks = [block.chunks.join("")];
    block.close = unclosedFence((block.chunks[0] ?? "").trim());
  }
}
