import type {
  ApprovalCard,
  ChatOutbound,
  OutboundLimits,
  PostedMessage,
  ReplyPart,
  ThreadRef,
} from "../chat/index.js";
import { AgentSessions } from "./agent-sessions.js";
import { answerBlocks, messageBlocks, RunAnswers } from "./answer-feedback.js";
import { type CallScope, errorCode, type SlackApi, SlackApiError, UNSUPPORTED_METHOD_CODES } from "./api.js";
import { approvalBlocks, approvalFallbackText } from "./approval-blocks.js";
import { SLACK_DIALECT } from "./dialect.js";
import { feedbackBlock } from "./feedback-blocks.js";
import {
  NativeReply,
  type SessionStatus,
  SLACK_STREAM_LIMITS,
  type StreamContent,
  type StreamLimits,
  streamContent,
} from "./native-stream.js";
import { SILENT_SLACK_LOGGER, type SlackLogger } from "./options.js";
import type { RecipientStore } from "./recipients.js";
import { footerBlock, splitFooter } from "./run-footer.js";

/**
 * What the renderer must respect on Slack: at most one edit per second per message, at most 4,000 bytes
 * of text per post or update (UTF-8, measured by `measure`); mrkdwn is {@link SLACK_DIALECT}.
 */
export const SLACK_LIMITS: OutboundLimits = {
  maxMessageChars: 4000,
  minEditIntervalMs: 1000,
  measure: (text) => Buffer.byteLength(text, "utf8"),
};

/** Options of {@link SlackOutbound}. */
export interface SlackOutboundOptions {
  api: SlackApi;
  /** Use native streaming (`chat.startStream`…) where the workspace supports it. Default `true`. */
  streaming?: boolean;
  /** Recipients of streamed replies (required by Slack outside DMs); without it, no streaming in channels. */
  recipients?: RecipientStore;
  log?: SlackLogger;
  /** Native stream limits. Default {@link SLACK_STREAM_LIMITS} (tests shrink them). */
  streamLimits?: Partial<StreamLimits>;
  /** The clock of stream lifetimes. Default `Date.now`. */
  now?: () => number;
  /**
   * How often a status still shown is sent again: Slack removes it after two minutes without a message
   * ("A two minute timeout applies", https://docs.slack.dev/reference/methods/assistant.threads.setStatus).
   * Default 90 s.
   */
  statusRefreshMs?: number;
  /** 👍 / 👎 feedback buttons under the last message of each run's answer. Default `true`. */
  feedback?: boolean;
  /**
   * The id of the run now active in `thread`, asked once when a run's status first shows (the worker
   * holds the thread then); it names the run in the feedback buttons. Default: unknown.
   */
  runIdOf?: (thread: ThreadRef) => Promise<string | undefined>;
}

/** Statuses are refreshed for at most this long without a change (a run that never cleared its status). */
const STATUS_REFRESH_MAX_MS = 2 * 60 * 60 * 1000;

/**
 * The worker's Slack client ({@link ChatOutbound}): posts, edits, reactions, statuses, agent sessions,
 * approval cards and private notices through the Web API, every call within the shared method budgets.
 *
 * Replies stream natively where the workspace supports it: `post` starts a stream, an `edit` that only
 * appends text appends to it ({@link NativeReply}: continued in new messages before a stream's cap or
 * lifetime is reached, and when Slack refuses more, so no text is lost), and the stream is stopped when
 * the text changes otherwise (then the first message is updated with `chat.update` and its continuations
 * are deleted), when another message is posted in the thread, or when the run ends (`endRun`).
 * At the run's end the last message of its answer gets the 👍 / 👎 feedback buttons naming the run
 * (`chat.stopStream` blocks, or a final `chat.update` of a posted-and-edited message; see `feedback`).
 * Support is detected once per workspace (and process): `unknown_method` / `not_allowed` and similar
 * answers switch the workspace to post + edit.
 *
 * The thread's agent session (`agents.sessions.setStatus`) follows the run: `processing` (titled from the
 * request, see {@link RecipientStore.setTitle}) from the first status, `suspended` while an approval card
 * waits, `processing` again once it is decided, `active` when the run ends. It is written in the
 * background ({@link AgentSessions}): nothing of a run waits for that method's Tier 3 budget, and only the
 * newest status is sent when the budget allows (see {@link settled}). The "is thinking…" status uses
 * `assistant.threads.setStatus`, is sent again every `statusRefreshMs` while shown, and is skipped where
 * it is unavailable or its budget is used up. `react` / `unreact` are idempotent.
 */
export class SlackOutbound implements ChatOutbound {
  readonly limits = SLACK_LIMITS;
  readonly dialect = SLACK_DIALECT;
  /** Native streams show tool calls as task cards (where a workspace cannot stream, `text` is shown). */
  readonly toolTasks: boolean;
  private readonly api: SlackApi;
  private readonly log: SlackLogger;
  private readonly streamingEnabled: boolean;
  private readonly recipients: RecipientStore | undefined;
  private readonly streamLimits: StreamLimits;
  private readonly now: () => number;
  private readonly statusRefreshMs: number;
  private readonly noStreaming = new Set<string>();
  private readonly noStatus = new Set<string>();
  /** Open native replies by their id (first message ts). */
  private readonly streams = new Map<string, NativeReply>();
  /** The threads' agent sessions, written in the background. */
  private readonly sessions: AgentSessions;
  /** Timers that keep a shown status alive, by thread. */
  private readonly refreshers = new Map<string, NodeJS.Timeout>();
  /** Recipients looked up ahead of the first post of a run (keyed by thread), off the critical path. */
  private readonly pendingRecipients = new Map<string, Promise<string | undefined>>();
  /** What each run's feedback buttons go on. */
  private readonly answers: RunAnswers;
  /** The run footer held back from an open native reply (by its id): its context block goes in at the stop. */
  private readonly footers = new Map<string, string>();
  private readonly feedback: boolean;

  constructor(options: SlackOutboundOptions) {
    this.api = options.api;
    this.log = options.log ?? SILENT_SLACK_LOGGER;
    this.streamingEnabled = options.streaming ?? true;
    this.toolTasks = this.streamingEnabled;
    this.recipients = options.recipients;
    this.streamLimits = { ...SLACK_STREAM_LIMITS, ...options.streamLimits };
    this.now = options.now ?? Date.now;
    this.statusRefreshMs = options.statusRefreshMs ?? 90_000;
    this.feedback = options.feedback ?? true;
    this.answers = new RunAnswers(options.runIdOf);
    const recipients = this.recipients;
    this.sessions = new AgentSessions({
      api: this.api,
      log: this.log,
      ...(recipients ? { titleOf: (thread: ThreadRef) => recipients.getTitle(thread) } : {}),
    });
  }

  /** Resolves once every agent-session status asked for so far has been sent (or given up on). */
  settled(): Promise<void> {
    return this.sessions.settled();
  }

  async post(thread: ThreadRef, text: string, parts?: ReplyPart[]): Promise<PostedMessage> {
    await this.stopStreams(thread, "processing");
    const held = holdFooter(text, parts);
    const streamed = await this.startStream(thread, streamContent(held.text, held.parts));
    if (streamed !== undefined) {
      this.holdStreamFooter(streamed, held.footer);
      this.answers.posted(thread, { id: streamed, text, streamed: true });
      return { id: streamed };
    }
    const result = await this.api.call("chat.postMessage", scope(thread), {
      channel: thread.channel,
      thread_ts: thread.thread,
      text,
      ...footerBlocks(text),
      unfurl_links: false,
      unfurl_media: false,
    });
    this.answers.posted(thread, { id: String(result.ts), text, streamed: false });
    return { id: String(result.ts) };
  }

  async edit(thread: ThreadRef, messageId: string, text: string, parts?: ReplyPart[]): Promise<void> {
    this.answers.edited(thread, messageId, text);
    const reply = this.streams.get(messageId);
    if (reply !== undefined) {
      const held = holdFooter(text, parts);
      const { markdown, tasks } = streamContent(held.text, held.parts);
      if (reply.accepts(markdown, tasks)) {
        await reply.update(markdown, tasks);
        this.holdStreamFooter(messageId, held.footer);
        return;
      }
      // A rewrite (a progress line changed): one message again, updated as a whole.
      this.streams.delete(messageId);
      this.footers.delete(messageId);
      try {
        await reply.stop("processing");
        await this.api.call("chat.update", scope(thread), {
          channel: thread.channel,
          ts: messageId,
          text,
          ...footerBlocks(text),
        });
      } finally {
        // The continuations go even when the update failed: a later edit updates only the first message
        // with the whole text, and their text would show twice.
        for (const ts of reply.messageTs.slice(1)) await this.deleteMessage(thread, ts);
      }
      this.answers.edited(thread, messageId, text, true);
      return;
    }
    await this.api.call("chat.update", scope(thread), {
      channel: thread.channel,
      ts: messageId,
      text,
      ...footerBlocks(text),
    });
  }

  /** Remembers (or forgets) the footer an open native reply's last content held back. */
  private holdStreamFooter(id: string, footer: string | undefined): void {
    if (footer === undefined) this.footers.delete(id);
    else this.footers.set(id, footer);
  }

  /** The blocks a native reply stops with: its held-back footer, then (`feedback`) the buttons. */
  private stopBlocks(id: string, feedback: ((ts: string) => Record<string, unknown>) | undefined) {
    const footer = this.footers.get(id);
    this.footers.delete(id);
    if (footer === undefined && feedback === undefined) return undefined;
    return (ts: string) => [
      ...(footer === undefined ? [] : [footerBlock(footer)]),
      ...(feedback ? [feedback(ts)] : []),
    ];
  }

  async delete(thread: ThreadRef, messageId: string): Promise<void> {
    this.answers.deleted(thread, messageId);
    const reply = this.streams.get(messageId);
    this.streams.delete(messageId);
    await reply?.stop("processing");
    for (const ts of reply?.messageTs.slice(1) ?? []) await this.deleteMessage(thread, ts);
    await this.api.call("chat.delete", scope(thread), { channel: thread.channel, ts: messageId });
  }

  async react(thread: ThreadRef, messageId: string, emoji: string): Promise<void> {
    await this.ignoring("already_reacted", () =>
      this.api.call("reactions.add", scope(thread), {
        channel: thread.channel,
        timestamp: messageId,
        name: emoji,
      }),
    );
  }

  async unreact(thread: ThreadRef, messageId: string, emoji: string): Promise<void> {
    await this.ignoring("no_reaction", () =>
      this.api.call("reactions.remove", scope(thread), {
        channel: thread.channel,
        timestamp: messageId,
        name: emoji,
      }),
    );
  }

  async setStatus(thread: ThreadRef, status: string | null): Promise<void> {
    const key = threadKey(thread);
    clearInterval(this.refreshers.get(key));
    this.refreshers.delete(key);
    if (status !== null) {
      // A run starts: look the stream recipient up now, so the first post does not wait for it.
      this.prefetchRecipient(thread);
      this.answers.runShown(thread);
      if (this.sessions.wanted(thread) !== "processing") this.sessions.set(thread, "processing");
      this.keepAlive(thread, status);
    }
    await this.sendStatus(thread, status ?? "");
  }

  /** Closes the run's open streams (with the footer and feedback buttons), sets the session active, clears the status. */
  async endRun(thread: ThreadRef): Promise<void> {
    const key = threadKey(thread);
    clearInterval(this.refreshers.get(key));
    this.refreshers.delete(key);
    this.pendingRecipients.delete(key);
    await this.endReply(thread);
    // Only a session this process moved on (a run it showed) is set back to active.
    this.sessions.set(thread, "active", true);
    await this.sendStatus(thread, "");
  }

  async postApproval(thread: ThreadRef, card: ApprovalCard): Promise<PostedMessage> {
    await this.stopStreams(thread, "suspended");
    const result = await this.api.call("chat.postMessage", scope(thread), {
      channel: thread.channel,
      thread_ts: thread.thread,
      text: approvalFallbackText(card),
      blocks: approvalBlocks(card),
      unfurl_links: false,
      unfurl_media: false,
    });
    if (card.state.kind === "pending") this.sessions.set(thread, "suspended");
    return { id: String(result.ts) };
  }

  async updateApproval(thread: ThreadRef, messageId: string, card: ApprovalCard): Promise<void> {
    await this.api.call("chat.update", scope(thread), {
      channel: thread.channel,
      ts: messageId,
      text: approvalFallbackText(card),
      blocks: approvalBlocks(card),
    });
    // Decided while the run waits: it works again (a run that already ended stays active).
    if (card.state.kind !== "pending" && this.sessions.wanted(thread) === "suspended") {
      this.sessions.set(thread, "processing");
    }
  }

  async notify(thread: ThreadRef, userId: string, text: string): Promise<void> {
    await this.api.call("chat.postEphemeral", scope(thread), {
      channel: thread.channel,
      thread_ts: thread.thread,
      user: userId,
      text,
    });
  }

  private async sendStatus(thread: ThreadRef, status: string): Promise<void> {
    if (this.noStatus.has(thread.workspace)) return;
    try {
      await this.api.tryCall("assistant.threads.setStatus", scope(thread), {
        channel_id: thread.channel,
        thread_ts: thread.thread,
        status,
      });
    } catch (err) {
      if (!UNSUPPORTED_METHOD_CODES.has(errorCode(err))) throw err;
      this.noStatus.add(thread.workspace);
      this.log.info({ team: thread.workspace, code: errorCode(err) }, "slack: no thread status here");
    }
  }

  /** Sends `status` again every `statusRefreshMs` so Slack's two-minute expiry never blanks it. */
  private keepAlive(thread: ThreadRef, status: string): void {
    const key = threadKey(thread);
    const until = this.now() + STATUS_REFRESH_MAX_MS;
    const timer = setInterval(() => {
      if (this.now() > until) {
        clearInterval(timer);
        this.refreshers.delete(key);
        return;
      }
      this.sendStatus(thread, status).catch((err: unknown) =>
        this.log.warn(
          { team: thread.workspace, code: errorCode(err) },
          "slack: could not refresh the status",
        ),
      );
    }, this.statusRefreshMs);
    timer.unref();
    this.refreshers.set(key, timer);
  }

  /** Starts a native stream; `undefined` when this workspace or thread cannot stream. */
  private async startStream(thread: ThreadRef, content: StreamContent): Promise<string | undefined> {
    if (!this.streamingEnabled || this.noStreaming.has(thread.workspace)) return undefined;
    const direct = thread.channel.startsWith("D");
    const recipient = direct ? undefined : await this.takeRecipient(thread);
    if (!direct && recipient === undefined) return undefined;
    const reply = new NativeReply({
      api: this.api,
      thread,
      recipient,
      now: this.now,
      limits: this.streamLimits,
      log: this.log,
    });
    try {
      await reply.update(content.markdown, content.tasks);
    } catch (err) {
      if (reply.id !== "") {
        // The first message exists: the rest is sent again by the next edit.
        this.streams.set(reply.id, reply);
        return reply.id;
      }
      const code = errorCode(err);
      if (UNSUPPORTED_METHOD_CODES.has(code)) {
        this.noStreaming.add(thread.workspace);
        this.log.info(
          { team: thread.workspace, code },
          "slack: no native streaming here; posting and editing",
        );
      } else {
        this.log.warn({ team: thread.workspace, code }, "slack: could not start a stream; posting instead");
      }
      return undefined;
    }
    this.streams.set(reply.id, reply);
    return reply.id;
  }

  private prefetchRecipient(thread: ThreadRef): void {
    if (!this.streamingEnabled || this.noStreaming.has(thread.workspace) || !this.recipients) return;
    const key = threadKey(thread);
    if (this.pendingRecipients.has(key)) return;
    this.pendingRecipients.set(
      key,
      this.recipients.get(thread).catch(() => undefined),
    );
  }

  private takeRecipient(thread: ThreadRef): Promise<string | undefined> {
    const key = threadKey(thread);
    const pending = this.pendingRecipients.get(key);
    this.pendingRecipients.delete(key);
    return pending ?? this.recipients?.get(thread).catch(() => undefined) ?? Promise.resolve(undefined);
  }

  /**
   * The run ended: its open streams are stopped (session `active`), the last message of its answer with
   * the feedback buttons at the bottom — in `chat.stopStream` for a stream still open, with a final
   * `chat.update` for a message that was posted and edited (its text then in a section or markdown block,
   * as blocks replace the text). A stream that Slack already ended gets none. Never rejects.
   */
  private async endReply(thread: ThreadRef): Promise<void> {
    const { last, runId } = await this.answers.take(thread);
    const buttons =
      this.feedback && last !== undefined ? (ts: string) => feedbackBlock(runId, ts) : undefined;
    const open = [...this.streams].filter(([, reply]) => sameThread(reply.options.thread, thread));
    for (const [id] of open) this.streams.delete(id);
    await Promise.all(
      open.map(([id, reply]) =>
        reply.stop("active", this.stopBlocks(id, last?.streamed && id === last.id ? buttons : undefined)),
      ),
    );
    if (!buttons || last === undefined || last.streamed) return;
    try {
      await this.api.call("chat.update", scope(thread), {
        channel: thread.channel,
        ts: last.id,
        text: last.text,
        blocks: answerBlocks(last.text, runId, last.id),
      });
    } catch (err) {
      this.log.warn(
        { team: thread.workspace, code: errorCode(err) },
        "slack: could not add the feedback buttons",
      );
    }
  }

  /** Stops the thread's open streams (each with its held-back footer), leaving its session in `status`. Never rejects. */
  private async stopStreams(thread: ThreadRef, status: SessionStatus): Promise<void> {
    const open = [...this.streams].filter(([, reply]) => sameThread(reply.options.thread, thread));
    for (const [id] of open) this.streams.delete(id);
    await Promise.all(open.map(([id, reply]) => reply.stop(status, this.stopBlocks(id, undefined))));
  }

  private async deleteMessage(thread: ThreadRef, ts: string): Promise<void> {
    await this.ignoring("message_not_found", () =>
      this.api.call("chat.delete", scope(thread), { channel: thread.channel, ts }),
    );
  }

  private async ignoring(code: string, call: () => Promise<unknown>): Promise<void> {
    try {
      await call();
    } catch (err) {
      if (!(err instanceof SlackApiError && err.code === code)) throw err;
    }
  }
}

function scope(thread: ThreadRef): CallScope {
  return { team: thread.workspace, channel: thread.channel };
}

function threadKey(thread: ThreadRef): string {
  return `${thread.workspace}:${thread.channel}:${thread.thread}`;
}

function sameThread(a: ThreadRef, b: ThreadRef): boolean {
  return a.workspace === b.workspace && a.channel === b.channel && a.thread === b.thread;
}

/** `blocks` for a message whose last line is the run footer (it goes in a context block); else nothing. */
function footerBlocks(text: string): { blocks?: Record<string, unknown>[] } {
  return splitFooter(text).footer === undefined ? {} : { blocks: messageBlocks(text) };
}

/**
 * The content a native stream gets: `text` and `parts` without a last footer line, which goes in at the
 * stream's stop as a context block instead (a stream's markdown cannot be small grey text).
 */
function holdFooter(
  text: string,
  parts: ReplyPart[] | undefined,
): { text: string; parts: ReplyPart[] | undefined; footer: string | undefined } {
  const { body, footer } = splitFooter(text);
  if (footer === undefined) return { text, parts, footer };
  const last = parts?.at(-1);
  if (!parts || last?.kind !== "text") return { text: body, parts, footer };
  return {
    text: body,
    parts: [...parts.slice(0, -1), { kind: "text", text: splitFooter(last.text).body }],
    footer,
  };
}
