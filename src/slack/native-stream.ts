import type { ThreadRef } from "../chat/index.js";
import { type CallScope, errorCode, type SlackApi } from "./api.js";
import type { SlackLogger } from "./options.js";

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

/** Answers that mean "this stream takes nothing more": continue in a new message (issue 14). */
const ROTATE_CODES = new Set(["msg_too_long", "message_not_in_streaming_state"]);

/** Kept free in every stream for the fence that closes an open code block when it is rotated. */
const FENCE_RESERVE = 8;

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
 * Calls are made one at a time by the caller (the renderer serializes operations per message).
 */
export class NativeReply {
  /** The markdown Slack accepted, in order (reopened fences excluded). */
  markdown = "";
  private readonly segments: Segment[] = [];

  constructor(readonly options: NativeReplyOptions) {}

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
    while (rest !== "") {
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

  /** Stops the open stream (closing an open code block), leaving the session in `status`. Never rejects. */
  async stop(status: SessionStatus): Promise<void> {
    const segment = this.segments.at(-1);
    if (segment?.open) await this.close(segment, status);
  }

  /** Appends `rest[0, length)` to `segment`; returns what is left. A rotate answer closes the segment. */
  private async appendTo(segment: Segment, rest: string, length: number): Promise<string> {
    const piece = rest.slice(0, length);
    try {
      await this.options.api.call("chat.appendStream", this.scope(), {
        channel: this.options.thread.channel,
        ts: segment.ts,
        markdown_text: piece,
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
    return rest.slice(piece.length);
  }

  /** Starts the next message with the start of `rest` (reopening an open code block); returns the rest. */
  private async continueWith(rest: string): Promise<string> {
    const { api, thread, recipient, limits } = this.options;
    const reopen = this.segments.length > 0 ? openFence(this.markdown) : undefined;
    const prefix = reopen === undefined ? "" : `${reopen}\n`;
    const room = Math.min(limits.maxStreamChars - FENCE_RESERVE, limits.maxCallChars) - prefix.length;
    const piece = rest.slice(0, cutAt(rest, room));
    const args: Record<string, unknown> = {
      channel: thread.channel,
      thread_ts: thread.thread,
      markdown_text: prefix + piece,
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
    return rest.slice(piece.length);
  }

  private async close(segment: Segment, status: SessionStatus): Promise<void> {
    segment.open = false;
    const args: Record<string, unknown> = {
      channel: this.options.thread.channel,
      ts: segment.ts,
      session_status: status,
    };
    if (openFence(this.markdown) !== undefined) args.markdown_text = "\n```";
    try {
      await this.options.api.call("chat.stopStream", this.scope(), args);
    } catch (err) {
      // A stream Slack already ended keeps what it accepted; nothing is lost.
      this.options.log.info(
        { team: this.options.thread.workspace, ts: segment.ts, code: errorCode(err) },
        "slack: could not stop a stream",
      );
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
