import type { ApprovalCard, ChatOutbound, OutboundLimits, PostedMessage, ThreadRef } from "../chat/index.js";
import { type CallScope, errorCode, type SlackApi, SlackApiError } from "./api.js";
import { approvalBlocks, approvalFallbackText } from "./approval-blocks.js";
import { SILENT_SLACK_LOGGER, type SlackLogger } from "./options.js";
import type { RecipientStore } from "./recipients.js";
import { mrkdwnToStreamMarkdown } from "./stream-markdown.js";

/**
 * What the renderer must respect on Slack: at most one edit per second per message, at most 4,000 bytes
 * of text per post or update (UTF-8, measured by `measure`), and mrkdwn.
 */
export const SLACK_LIMITS: OutboundLimits = {
  maxMessageChars: 4000,
  minEditIntervalMs: 1000,
  dialect: "slack",
  measure: (text) => Buffer.byteLength(text, "utf8"),
};

/** Error codes that mean "this workspace (or token) cannot use the method at all". */
const UNSUPPORTED = new Set([
  "unknown_method",
  "not_allowed",
  "not_allowed_token_type",
  "missing_scope",
  "method_deprecated",
  "feature_not_enabled",
  "team_not_allowed",
]);

/** Options of {@link SlackOutbound}. */
export interface SlackOutboundOptions {
  api: SlackApi;
  /** Use native streaming (`chat.startStream`…) where the workspace supports it. Default `true`. */
  streaming?: boolean;
  /** Recipients of streamed replies (required by Slack outside DMs); without it, no streaming in channels. */
  recipients?: RecipientStore;
  log?: SlackLogger;
}

interface StreamSession {
  thread: ThreadRef;
  /** The Markdown streamed so far. */
  markdown: string;
}

/**
 * The worker's Slack client ({@link ChatOutbound}): posts, edits, reactions, statuses, approval cards and
 * private notices through the Web API, every call within the shared method budgets.
 *
 * Replies stream natively where the workspace supports it: `post` starts a stream, an `edit` that only
 * appends text appends to it, and the stream is stopped when the text changes otherwise (then the
 * message is edited with `chat.update` from there on), when another message is posted in the thread,
 * or when the status is cleared at the end of the run. Support is detected once per workspace (and
 * process): `unknown_method` / `not_allowed` and similar answers switch the workspace to post + edit.
 * The "is thinking…" status uses `assistant.threads.setStatus` and is skipped where it is unavailable or
 * its budget is used up. `react` / `unreact` are idempotent.
 */
export class SlackOutbound implements ChatOutbound {
  readonly limits = SLACK_LIMITS;
  private readonly api: SlackApi;
  private readonly log: SlackLogger;
  private readonly streamingEnabled: boolean;
  private readonly recipients: RecipientStore | undefined;
  private readonly noStreaming = new Set<string>();
  private readonly noStatus = new Set<string>();
  private readonly streams = new Map<string, StreamSession>();
  /** Recipients looked up ahead of the first post of a run (keyed by thread), off the critical path. */
  private readonly pendingRecipients = new Map<string, Promise<string | undefined>>();

  constructor(options: SlackOutboundOptions) {
    this.api = options.api;
    this.log = options.log ?? SILENT_SLACK_LOGGER;
    this.streamingEnabled = options.streaming ?? true;
    this.recipients = options.recipients;
  }

  async post(thread: ThreadRef, text: string): Promise<PostedMessage> {
    await this.stopStreams(thread);
    const streamed = await this.startStream(thread, text);
    if (streamed !== undefined) return { id: streamed };
    const result = await this.api.call("chat.postMessage", scope(thread), {
      channel: thread.channel,
      thread_ts: thread.thread,
      text,
      unfurl_links: false,
      unfurl_media: false,
    });
    return { id: String(result.ts) };
  }

  async edit(thread: ThreadRef, messageId: string, text: string): Promise<void> {
    const session = this.streams.get(messageId);
    if (session !== undefined) {
      const markdown = mrkdwnToStreamMarkdown(text);
      if (markdown.startsWith(session.markdown)) {
        const delta = markdown.slice(session.markdown.length);
        if (delta === "") return;
        await this.api.call("chat.appendStream", scope(thread), {
          channel: thread.channel,
          ts: messageId,
          markdown_text: delta,
        });
        session.markdown = markdown;
        return;
      }
      await this.stopStream(messageId);
    }
    await this.api.call("chat.update", scope(thread), { channel: thread.channel, ts: messageId, text });
  }

  async delete(thread: ThreadRef, messageId: string): Promise<void> {
    if (this.streams.has(messageId)) await this.stopStream(messageId);
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
    // The end of a run clears the status: the moment to close streams that are still open.
    if (status === null) {
      this.pendingRecipients.delete(threadKey(thread));
      await this.stopStreams(thread);
    } else {
      // A run starts: look the stream recipient up now, so the first post does not wait for it.
      this.prefetchRecipient(thread);
    }
    if (this.noStatus.has(thread.workspace)) return;
    try {
      await this.api.tryCall("assistant.threads.setStatus", scope(thread), {
        channel_id: thread.channel,
        thread_ts: thread.thread,
        status: status ?? "",
      });
    } catch (err) {
      if (!UNSUPPORTED.has(errorCode(err))) throw err;
      this.noStatus.add(thread.workspace);
      this.log.info({ team: thread.workspace, code: errorCode(err) }, "slack: no thread status here");
    }
  }

  async postApproval(thread: ThreadRef, card: ApprovalCard): Promise<PostedMessage> {
    await this.stopStreams(thread);
    const result = await this.api.call("chat.postMessage", scope(thread), {
      channel: thread.channel,
      thread_ts: thread.thread,
      text: approvalFallbackText(card),
      blocks: approvalBlocks(card),
      unfurl_links: false,
      unfurl_media: false,
    });
    return { id: String(result.ts) };
  }

  async updateApproval(thread: ThreadRef, messageId: string, card: ApprovalCard): Promise<void> {
    await this.api.call("chat.update", scope(thread), {
      channel: thread.channel,
      ts: messageId,
      text: approvalFallbackText(card),
      blocks: approvalBlocks(card),
    });
  }

  async notify(thread: ThreadRef, userId: string, text: string): Promise<void> {
    await this.api.call("chat.postEphemeral", scope(thread), {
      channel: thread.channel,
      thread_ts: thread.thread,
      user: userId,
      text,
    });
  }

  /** Starts a native stream; `undefined` when this workspace or thread cannot stream. */
  private async startStream(thread: ThreadRef, text: string): Promise<string | undefined> {
    if (!this.streamingEnabled || this.noStreaming.has(thread.workspace)) return undefined;
    const direct = thread.channel.startsWith("D");
    const recipient = direct ? undefined : await this.takeRecipient(thread);
    if (!direct && recipient === undefined) return undefined;
    const markdown = mrkdwnToStreamMarkdown(text);
    const args: Record<string, unknown> = {
      channel: thread.channel,
      thread_ts: thread.thread,
      markdown_text: markdown,
    };
    if (recipient !== undefined)
      Object.assign(args, { recipient_team_id: thread.workspace, recipient_user_id: recipient });
    try {
      const result = await this.api.call("chat.startStream", scope(thread), args);
      const ts = String(result.ts);
      this.streams.set(ts, { thread, markdown });
      return ts;
    } catch (err) {
      const code = errorCode(err);
      if (UNSUPPORTED.has(code)) {
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

  private async stopStreams(thread: ThreadRef): Promise<void> {
    const open = [...this.streams].filter(([, session]) => sameThread(session.thread, thread));
    await Promise.all(open.map(([ts]) => this.stopStream(ts)));
  }

  /** Stops a stream; its text stays as streamed. Never rejects (a stream Slack already ended is fine). */
  private async stopStream(ts: string): Promise<void> {
    const session = this.streams.get(ts);
    if (!session) return;
    this.streams.delete(ts);
    try {
      await this.api.call("chat.stopStream", scope(session.thread), { channel: session.thread.channel, ts });
    } catch (err) {
      this.log.warn(
        { team: session.thread.workspace, code: errorCode(err), ts },
        "slack: could not stop a stream",
      );
    }
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
