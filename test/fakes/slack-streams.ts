import { blockErrors } from "./slack-blocks.js";
import type { FakeMessage, FakeSession } from "./slack-store.js";
import type { ApiReply, WebApiContext } from "./slack-web-api.js";

/**
 * Slack's native streaming (`chat.startStream` / `appendStream` / `stopStream`) and agent sessions
 * (`agents.sessions.setStatus`) as the fake enforces them. Every limit is from Slack's docs or, where Slack
 * documents none, from what peers measured against the real API (the figure the issue gives):
 */
export const FAKE_STREAM_LIMITS = {
  /**
   * `markdown_text` of one call: "Limit this field to 12,000 characters"
   * (https://docs.slack.dev/reference/methods/chat.startStream, …/chat.appendStream, …/chat.stopStream).
   */
  maxCallChars: 12_000,
  /**
   * What one streamed message holds in total: undocumented; appends past it fail `msg_too_long`, measured
   * against the live API (https://github.com/CopilotKit/CopilotKit/pull/6244). 12,000 as issue 14 says.
   */
  maxStreamChars: 12_000,
  /**
   * A stream's lifetime: undocumented; Slack ends a stream "after roughly five minutes", later calls fail
   * `message_not_in_streaming_state` (https://github.com/vercel/chat/pull/884,
   * https://github.com/slackapi/python-slack-sdk/issues/1859). Counted from `chat.startStream`.
   */
  lifetimeMs: 5 * 60_000,
  /**
   * A `task_update` chunk's `details` and `output`: "Maximum 256 characters"
   * (https://microsoft.github.io/Agents-for-js/interfaces/_microsoft_agents-hosting-extensions-slack.TaskUpdateChunk.html;
   * chunk shapes: https://docs.slack.dev/reference/methods/chat.appendStream#chunks).
   */
  maxTaskText: 256,
  /** A session title: "max 200 characters" (https://docs.slack.dev/reference/methods/agents.sessions.setStatus). */
  maxTitleChars: 200,
} as const;

/** Session statuses: "Acceptable values: active processing suspended closed" (agents.sessions.setStatus). */
export const SESSION_STATUSES = new Set(["active", "processing", "suspended", "closed"]);
/** `task_update` statuses (https://docs.slack.dev/tools/node-slack-sdk/reference/types/interfaces/TaskUpdateChunk). */
const TASK_STATUSES = new Set(["pending", "in_progress", "complete", "error"]);

/** How the fake streams: its clock and the stream lifetime (tests shorten or simulate time). */
export interface FakeStreamClock {
  now(): number;
  lifetimeMs: number;
}

const fail = (error: string): ApiReply => ({ ok: false, error });

/** Ends a stream whose lifetime ran out; true while it is still open. */
export function streamOpen(message: FakeMessage, clock: FakeStreamClock): boolean {
  if (!message.streaming) return false;
  if (clock.now() - (message.streamStartedAt ?? 0) >= clock.lifetimeMs) message.streaming = false;
  return message.streaming;
}

/** The text a call adds (`markdown_text` and `markdown_text` chunks), or an error for invalid input. */
function addedText(args: Record<string, unknown>, message: FakeMessage | undefined): string | ApiReply {
  const markdown = args.markdown_text === undefined ? "" : String(args.markdown_text);
  if ([...markdown].length > FAKE_STREAM_LIMITS.maxCallChars) return fail("msg_too_long");
  if (args.chunks === undefined) return markdown;
  if (!Array.isArray(args.chunks)) return fail("invalid_chunks");
  let text = markdown;
  for (const raw of args.chunks as Record<string, unknown>[]) {
    switch (raw?.type) {
      case "markdown_text":
        if (typeof raw.text !== "string") return fail("invalid_chunks");
        text += raw.text;
        break;
      case "task_update": {
        const valid =
          typeof raw.id === "string" &&
          typeof raw.title === "string" &&
          TASK_STATUSES.has(String(raw.status)) &&
          [raw.details, raw.output].every(
            (field) =>
              field === undefined ||
              (typeof field === "string" && [...field].length <= FAKE_STREAM_LIMITS.maxTaskText),
          );
        if (!valid) return fail("invalid_chunks");
        if (message) {
          message.tasks ??= new Map();
          message.tasks.set(String(raw.id), { ...message.tasks.get(String(raw.id)), ...raw });
        }
        break;
      }
      case "plan_update":
        if (typeof raw.title !== "string") return fail("invalid_chunks");
        break;
      case "blocks":
        if (!Array.isArray(raw.blocks)) return fail("invalid_chunks");
        break;
      default:
        return fail("invalid_chunks");
    }
  }
  if ([...text].length > FAKE_STREAM_LIMITS.maxCallChars) return fail("msg_too_long");
  return text;
}

/** Appends `text` within the cumulative cap; `msg_too_long` (nothing appended) past it. */
function accept(ctx: WebApiContext, message: FakeMessage, text: string): ApiReply | undefined {
  const total = (message.streamChars ?? 0) + [...text].length;
  if (total > FAKE_STREAM_LIMITS.maxStreamChars) return fail("msg_too_long");
  message.streamChars = total;
  if (text === "") return undefined;
  message.text += text;
  message.edits++;
  message.history.push(message.text);
  ctx.store.changed();
  return undefined;
}

/** `chat.startStream`: a reply in a thread; channels need the recipient (its docs: "Required when streaming to channels"). */
export function startStream(
  args: Record<string, unknown>,
  ctx: WebApiContext,
  post: (text: string) => FakeMessage,
): ApiReply {
  if (!ctx.config.streaming) return fail("unknown_method");
  const channel = String(args.channel ?? "");
  if (!channel.startsWith("D") && (!args.recipient_user_id || !args.recipient_team_id)) {
    return fail("invalid_arguments");
  }
  if (
    args.task_display_mode !== undefined &&
    !["timeline", "plan"].includes(String(args.task_display_mode))
  ) {
    return fail("invalid_arguments");
  }
  const text = addedText(args, undefined);
  if (typeof text !== "string") return text;
  if ([...text].length > FAKE_STREAM_LIMITS.maxStreamChars) return fail("msg_too_long");
  const message = post("");
  Object.assign(message, {
    streaming: true,
    streamed: true,
    streamStartedAt: ctx.clock.now(),
    streamChars: 0,
  });
  addedText(args, message);
  accept(ctx, message, text);
  message.edits = 0;
  message.history = [message.text];
  return { ok: true, channel, ts: message.ts };
}

/** `chat.appendStream`: only while the stream is open and within its caps. */
export function appendStream(
  args: Record<string, unknown>,
  ctx: WebApiContext,
  message: FakeMessage,
): ApiReply {
  if (!streamOpen(message, ctx.clock)) return fail("message_not_in_streaming_state");
  // Validated first, applied only once accepted: Slack keeps nothing of a refused call, task cards included.
  const text = addedText(args, undefined);
  if (typeof text !== "string") return text;
  const refused = accept(ctx, message, text);
  if (refused) return refused;
  addedText(args, message);
  return { ok: true, channel: message.channel, ts: message.ts };
}

/** `chat.stopStream`: the last text, blocks at the bottom, and the session's status (default `active`). */
export function stopStream(
  args: Record<string, unknown>,
  ctx: WebApiContext,
  message: FakeMessage,
): ApiReply {
  if (!streamOpen(message, ctx.clock)) return fail("message_not_in_streaming_state");
  const status = args.session_status === undefined ? "active" : String(args.session_status);
  if (!SESSION_STATUSES.has(status)) return fail("invalid_arguments");
  // Blocks "appended to the end of the message" are validated like any message's (invalid_blocks).
  if (args.blocks !== undefined) {
    const errors = Array.isArray(args.blocks) ? blockErrors(args.blocks) : ["blocks: must be a list"];
    if (errors.length > 0) return { ok: false, error: "invalid_blocks", errors } as ApiReply;
  }
  const text = addedText(args, undefined);
  if (typeof text !== "string") return text;
  const refused = accept(ctx, message, text);
  if (refused) return refused;
  addedText(args, message);
  if (Array.isArray(args.blocks)) message.footerBlocks = args.blocks;
  message.streaming = false;
  const session = message.threadTs ? ctx.store.session(message.channel, message.threadTs) : undefined;
  if (session) setSessionStatus(session, status);
  ctx.store.changed();
  return { ok: true, channel: message.channel, ts: message.ts };
}

/** `agents.sessions.setStatus`: creates the thread's session (with its title) or updates its status. */
export function setSession(args: Record<string, unknown>, ctx: WebApiContext): ApiReply {
  if (!ctx.config.agentSessions) return fail("unknown_method");
  const status = String(args.status ?? "");
  if (!SESSION_STATUSES.has(status)) return fail("invalid_arguments");
  const channel = String(args.channel_id ?? "");
  const threadTs = String(args.thread_ts ?? "");
  if (channel === "" || threadTs === "") return fail("invalid_arguments");
  const title = args.title === undefined ? undefined : String(args.title);
  if (title !== undefined && [...title].length > FAKE_STREAM_LIMITS.maxTitleChars)
    return fail("invalid_arguments");
  let session = ctx.store.session(channel, threadTs);
  if (!session) {
    session = { channel, threadTs, status, history: [] };
    if (title !== undefined) session.title = title;
    if (args.initiator_user_id !== undefined) session.initiator = String(args.initiator_user_id);
    ctx.store.sessions.set(`${channel}:${threadTs}`, session);
  }
  setSessionStatus(session, status);
  ctx.store.changed();
  return { ok: true, status, ...(session.title !== undefined ? { title: session.title } : {}) };
}

function setSessionStatus(session: FakeSession, status: string): void {
  session.status = status;
  session.history.push(status);
}
