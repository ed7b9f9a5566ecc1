import type { ReplyPart, ThreadRef, ToolTask } from "../chat/index.js";
import { type CallScope, errorCode, type SlackApi } from "./api.js";
import type { SlackLogger } from "./options.js";
import { mrkdwnToStreamMarkdown } from "./stream-markdown.js";

/**
 * What one native stream takes. Where Slack documents a limit it is cited; where it does not, the
 * conservative figure of issue 14 is used, with what peers measured against the real API.
 */
export interface StreamLimits {
  /**
   * `markdown_text` of one call: "Limit this field to 12,000 characters"
   * (https://docs.slack.dev/reference/methods/chat.appendStream, …/chat.startStream).
   */
  maxCallChars: number;
  /**
   * Text one streamed message holds in total. Undocumented; Slack answers `msg_too_long` past about 12,000
   * characters (https://github.com/CopilotKit/CopilotKit/pull/6244).
   */
  maxStreamChars: number;
  /**
   * Age at which a stream is replaced by a continuation. Undocumented; Slack ends streams after roughly
   * five minutes (https://github.com/vercel/chat/pull/884), so rotate after four.
   */
  maxAgeMs: number;
}

/** Default {@link StreamLimits}. Lengths are UTF-16 code units, never fewer than Slack's characters. */
export const SLACK_STREAM_LIMITS: StreamLimits = {
  maxCallChars: 12_000,
  maxStreamChars: 12_000,
  maxAgeMs: 4 * 60_000,
};

/** An agent session's lifecycle status (https://docs.slack.dev/reference/methods/agents.sessions.setStatus). */
export type SessionStatus = "active" | "processing" | "suspended" | "closed";

/**
 * Sets the agent session of `thread` to `status` with `agents.sessions.setStatus` (the call creates the
 * session, titled with `title`, when the thread has none). Rejects as {@link SlackApi.call} does.
 */
export async function setSessionStatus(
  api: SlackApi,
  thread: ThreadRef,
  status: SessionStatus,
  title?: string,
): Promise<void> {
  await api.call(
    "agents.sessions.setStatus",
    { team: thread.workspace, channel: thread.channel },
    sessionStatusArgs(thread, status, title),
  );
}

/** The arguments of an `agents.sessions.setStatus` call (`title` names a session the call creates). */
export function sessionStatusArgs(
  thread: ThreadRef,
  status: SessionStatus,
  title?: string,
): Record<string, unknown> {
  const args: Record<string, unknown> = { channel_id: thread.channel, thread_ts: thread.thread, status };
  if (title !== undefined) args.title = title;
  return args;
}

/** Answers that mean "this stream takes nothing more": continue in a new message (issue 14). */
const ROTATE_CODES = new Set(["msg_too_long", "message_not_in_streaming_state"]);

/** Task states after which a card changes no more. */
const FINAL = new Set<ToolTask["status"]>(["complete", "error"]);

/** Kept free in every stream for the fence that closes an open code block when it is rotated. */
const FENCE_RESERVE = 8;

/** A tool's task card and where it stands in the reply's markdown (before the text from offset `at`). */
export interface AnchoredTask {
  at: number;
  task: ToolTask;
}

interface Segment {
  ts: string;
  /** Characters this message's stream accepted (reopened fence included). */
  chars: number;
  startedAt: number;
  open: boolean;
}

/** What {@link NativeReply} needs. */
export interface NativeReplyOptions {
  api: SlackApi;
  thread: ThreadRef;
  /** The stream's recipient (channels); `undefined` in DMs. */
  recipient: string | undefined;
  now: () => number;
  limits: StreamLimits;
  log: SlackLogger;
}

/**
 * One reply streamed natively, continued in new messages whenever a stream can take no more: before its
 * lifetime runs out (at a line break outside code when there is one), when the next text would pass its
 * cap, and when Slack answers `msg_too_long` or `message_not_in_streaming_state`. It keeps exactly what
 * Slack accepted (`markdown`), so text Slack refused is sent again in the continuation, never twice and
 * never lost. A code block open at a rotation is closed in the old message and reopened in the new one.
 * Tool calls are `task_update` chunks placed where they stand in the text (Slack's `timeline` display);
 * a later state of a task is sent in the message that shows it, or, once that message's stream has ended,
 * as a new card in the current one. Calls are made one at a time by the caller (the renderer serializes
 * operations per message).
 */
export class NativeReply {
  /** The markdown Slack accepted, in order (reopened fences excluded). */
  markdown = "";
  private readonly segments: Segment[] = [];
  /** The reply's tasks as last given, in order. */
  private tasks: readonly AnchoredTask[] = [];
  /** Per task id: what was last sent (JSON) and the index of the segment that shows it. */
  private readonly sentTasks = new Map<string, { sent: string; segment: number }>();

  constructor(readonly options: NativeReplyOptions) {}

  /**
   * True when `markdown` and `tasks` only add to what was sent (more text, new tasks after the accepted
   * text, new states of the tasks sent), so {@link NativeReply.update} can stream them.
   */
  accepts(markdown: string, tasks: readonly AnchoredTask[]): boolean {
    if (!markdown.startsWith(this.markdown)) return false;
    const anchors = new Map(tasks.map((entry) => [entry.task.id, entry.at]));
    for (const entry of this.tasks) {
      if (this.sentTasks.has(entry.task.id) && anchors.get(entry.task.id) !== entry.at) return false;
    }
    return tasks.every((entry) => this.sentTasks.has(entry.task.id) || entry.at >= this.markdown.length);
  }

  /** Streams what {@link NativeReply.accepts} allows: the new text with its tasks, and new task states. */
  async update(markdown: string, tasks: readonly AnchoredTask[]): Promise<void> {
    this.tasks = tasks;
    await this.append(markdown.slice(this.markdown.length));
  }

  /** The first message's ts: the reply's id for the renderer. */
  get id(): string {
    return this.segments[0]?.ts ?? "";
  }

  /** Every message of the reply, oldest first. */
  get messageTs(): string[] {
    return this.segments.map((segment) => segment.ts);
  }

  /**
   * Streams `text` after what was accepted. Rejects when a stream could not be started (nothing of the
   * remainder was accepted; a later call sends it again).
   */
  async append(text: string): Promise<void> {
    const { limits, now } = this.options;
    let rest = text;
    while (rest !== "" || this.dueTasks(this.markdown.length).length > 0) {
      const segment = this.segments.at(-1);
      if (segment === undefined || !segment.open) {
        rest = await this.continueWith(rest);
        continue;
      }
      const room = Math.min(limits.maxStreamChars - FENCE_RESERVE - segment.chars, limits.maxCallChars);
      const old = now() - segment.startedAt >= limits.maxAgeMs;
      if (room <= 0 || old) {
        // The stream still lives a while: give it the text up to a line break outside code first.
        const cut = old && room > 0 ? lineBreakOutsideCode(this.markdown, rest, room) : 0;
        if (cut > 0) rest = await this.appendTo(segment, rest, cut);
        await this.close(segment, "processing");
        continue;
      }
      rest = await this.appendTo(segment, rest, cutAt(rest, room));
    }
  }

  /**
   * Stops the open stream (closing an open code block), leaving the session in `status`, with `blocks` at
   * the bottom of its message. Never rejects. True when the stream was open and Slack took the stop (so
   * the blocks are shown).
   */
  async stop(status: SessionStatus, blocks?: (ts: string) => Record<string, unknown>[]): Promise<boolean> {
    const segment = this.segments.at(-1);
    if (!segment?.open) return false;
    return this.close(segment, status, blocks?.(segment.ts));
  }

  /**
   * Tasks to send with text reaching `upTo`: those never sent anchored up to there, and those whose state
   * changed since they were sent (in order).
   */
  private dueTasks(upTo: number): AnchoredTask[] {
    return this.tasks.filter((entry) => {
      const sent = this.sentTasks.get(entry.task.id);
      return sent === undefined ? entry.at <= upTo : sent.sent !== JSON.stringify(entry.task);
    });
  }

  /** The chunks of `piece` (the text after what was accepted) with the tasks due in it, in order. */
  private chunksFor(prefix: string, piece: string): Record<string, unknown>[] {
    const base = this.markdown.length;
    const chunks: Record<string, unknown>[] = [];
    let text = prefix;
    let offset = 0;
    for (const entry of this.dueTasks(base + piece.length)) {
      const at = Math.max(0, Math.min(piece.length, entry.at - base));
      if (at > offset) text += piece.slice(offset, at);
      offset = Math.max(offset, at);
      if (text !== "") chunks.push({ type: "markdown_text", text });
      text = "";
      chunks.push({ type: "task_update", ...entry.task });
    }
    text += piece.slice(offset);
    if (text !== "") chunks.push({ type: "markdown_text", text });
    return chunks;
  }

  /** Records the tasks of `chunks` as shown by the last segment. */
  private sent(chunks: Record<string, unknown>[]): void {
    const segment = this.segments.length - 1;
    for (const chunk of chunks) {
      if (chunk.type !== "task_update") continue;
      const { type: _type, ...task } = chunk;
      this.sentTasks.set(String(chunk.id), { sent: JSON.stringify(task), segment });
    }
  }

  /** Appends `rest[0, length)` to `segment`; returns what is left. A rotate answer closes the segment. */
  private async appendTo(segment: Segment, rest: string, length: number): Promise<string> {
    const piece = rest.slice(0, length);
    const chunks = this.chunksFor("", piece);
    try {
      await this.options.api.call("chat.appendStream", this.scope(), {
        channel: this.options.thread.channel,
        ts: segment.ts,
        chunks,
      });
    } catch (err) {
      if (!ROTATE_CODES.has(errorCode(err))) throw err;
      segment.open = false;
      this.options.log.info(
        { team: this.options.thread.workspace, ts: segment.ts, code: errorCode(err) },
        "slack: stream full or ended; continuing in a new message",
      );
      return rest;
    }
    segment.chars += piece.length;
    this.markdown += piece;
    this.sent(chunks);
    return rest.slice(piece.length);
  }

  /** Starts the next message with the start of `rest` (reopening an open code block); returns the rest. */
  private async continueWith(rest: string): Promise<string> {
    const { api, thread, recipient, limits } = this.options;
    const reopen = this.segments.length > 0 ? openFence(this.markdown) : undefined;
    const prefix = reopen === undefined ? "" : `${reopen}\n`;
    const room = Math.min(limits.maxStreamChars - FENCE_RESERVE, limits.maxCallChars) - prefix.length;
    const piece = rest.slice(0, cutAt(rest, room));
    // Tasks the ended message still shows running are carried over, so their next state has a card.
    const ended = this.segments.length;
    for (const entry of this.tasks) {
      const sent = this.sentTasks.get(entry.task.id);
      if (sent !== undefined && sent.segment < ended && !FINAL.has(entry.task.status)) {
        this.sentTasks.set(entry.task.id, { ...sent, sent: "" });
      }
    }
    let chunks = this.chunksFor(prefix, piece);
    // An empty stream still needs its message: the renderer only posts visible text, so this is rare.
    if (chunks.length === 0) chunks = [{ type: "markdown_text", text: " " }];
    const args: Record<string, unknown> = {
      channel: thread.channel,
      thread_ts: thread.thread,
      task_display_mode: "timeline",
      chunks,
    };
    if (recipient !== undefined)
      Object.assign(args, { recipient_team_id: thread.workspace, recipient_user_id: recipient });
    const result = await api.call("chat.startStream", this.scope(), args);
    this.segments.push({
      ts: String(result.ts),
      chars: prefix.length + piece.length,
      startedAt: this.options.now(),
      open: true,
    });
    this.markdown += piece;
    this.sent(chunks);
    return rest.slice(piece.length);
  }

  private async close(
    segment: Segment,
    status: SessionStatus,
    blocks?: Record<string, unknown>[],
  ): Promise<boolean> {
    segment.open = false;
    const args: Record<string, unknown> = {
      channel: this.options.thread.channel,
      ts: segment.ts,
      session_status: status,
    };
    if (openFence(this.markdown) !== undefined) args.markdown_text = "\n```";
    if (blocks !== undefined) args.blocks = blocks;
    try {
      await this.options.api.call("chat.stopStream", this.scope(), args);
      return true;
    } catch (err) {
      // A stream Slack already ended keeps what it accepted; nothing is lost.
      this.options.log.info(
        { team: this.options.thread.workspace, ts: segment.ts, code: errorCode(err) },
        "slack: could not stop a stream",
      );
      return false;
    }
  }

  private scope(): CallScope {
    return { team: this.options.thread.workspace, channel: this.options.thread.channel };
  }
}

/** The opening line of the code block `markdown` ends inside (` ```ts `), or `undefined`. */
export function openFence(markdown: string): string | undefined {
  let open: string | undefined;
  for (const line of markdown.split("\n")) {
    if (!line.trimStart().startsWith("```")) continue;
    open = open === undefined ? line.trim() : undefined;
  }
  return open;
}

/** A cut of `text` within `max` code units: at a line break in its second half if any; never in a pair. */
function cutAt(text: string, max: number): number {
  if (text.length <= max) return text.length;
  const lineBreak = text.lastIndexOf("\n", max - 1);
  let cut = lineBreak >= max / 2 ? lineBreak + 1 : max;
  const code = text.charCodeAt(cut - 1);
  if (code >= 0xd800 && code <= 0xdbff) cut--;
  return Math.max(1, cut);
}

/** Length of the longest start of `rest` (within `max`) ending in a line break outside code; 0 if none. */
function lineBreakOutsideCode(accepted: string, rest: string, max: number): number {
  let cut = Math.min(rest.length, max);
  for (;;) {
    const lineBreak = rest.lastIndexOf("\n", cut - 1);
    if (lineBreak < 0) return 0;
    if (openFence(accepted + rest.slice(0, lineBreak + 1)) === undefined) return lineBreak + 1;
    cut = lineBreak;
  }
}

/** A reply message as a native stream takes it: its markdown and its tasks anchored in it. */
export interface StreamContent {
  markdown: string;
  tasks: AnchoredTask[];
}

/**
 * The stream form of a message: `parts` (text runs in mrkdwn and tool tasks) when given, else `text`.
 * Whitespace around a task is dropped (the card is a block of its own); the text after one starts on a
 * new line.
 */
export function streamContent(text: string, parts: ReplyPart[] | undefined): StreamContent {
  if (parts === undefined) return { markdown: mrkdwnToStreamMarkdown(text), tasks: [] };
  let markdown = "";
  const tasks: AnchoredTask[] = [];
  for (const [index, part] of parts.entries()) {
    if (part.kind === "task") {
      tasks.push({ at: markdown.length, task: part.task });
      continue;
    }
    let run = mrkdwnToStreamMarkdown(part.text);
    if (parts[index + 1]?.kind === "task") run = run.trimEnd();
    if (parts[index - 1]?.kind === "task") run = run.replace(/^\s+/, markdown === "" ? "" : "\n");
    markdown += run;
  }
  return { markdown, tasks };
}
