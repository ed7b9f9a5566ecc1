import { type ThreadRef, threadId } from "../chat/index.js";
import { type FeedbackValue, feedbackBlock, parseFeedbackAction } from "./feedback-blocks.js";
import { type FeedbackLedger, memoryFeedbackLedger } from "./feedback-ledger.js";
import type { SlackLogger } from "./options.js";
import { footerBlock, splitFooter } from "./run-footer.js";
import { mrkdwnToStreamMarkdown } from "./stream-markdown.js";

/** One feedback click on an answer, as recorded. */
export interface SlackFeedback {
  thread: ThreadRef;
  /** The message the buttons are on. */
  messageTs: string;
  /** The run whose answer it is, when the buttons name it. */
  runId: string | undefined;
  userId: string;
  value: FeedbackValue;
}

/** Where a click came from, read from its `block_actions` payload. */
export interface FeedbackClick {
  team: string;
  channel: string;
  threadTs: string;
  messageTs: string;
  userId: string;
  action: { value?: unknown; block_id?: unknown };
}

/**
 * Records 👍 / 👎 clicks: one log line (thread, run, user, value) and `onFeedback`, once per user, message
 * and value. Slack sends a click again when the user clicks again; that is neither an error nor new
 * feedback, so it is skipped (debug log). Changing one's mind is recorded. Nothing is posted back. When
 * the ledger cannot be reached the click is recorded (a possible repeat beats a lost vote), and logged.
 */
export class FeedbackRecorder {
  constructor(
    private readonly log: SlackLogger,
    private readonly onFeedback: ((feedback: SlackFeedback) => void) | undefined,
    private readonly given: FeedbackLedger = memoryFeedbackLedger(),
  ) {}

  /** Records `click`; false when it is not a feedback click or repeats the user's last one. Never rejects. */
  async record(click: FeedbackClick): Promise<boolean> {
    const parsed = parseFeedbackAction(click.action);
    if (!parsed) return false;
    const { team, channel, threadTs, messageTs, userId } = click;
    const key = `${team}:${channel}:${messageTs}:${userId}`;
    let before: FeedbackValue | undefined;
    try {
      before = await this.given.swap(key, parsed.value);
    } catch (err) {
      this.log.warn({ err, channel, messageTs }, "slack: feedback not checked for repeats (Redis error)");
    }
    if (before === parsed.value) {
      this.log.debug?.({ channel, messageTs, user: userId }, "slack: the same feedback again; not recorded");
      return false;
    }
    const thread: ThreadRef = { platform: "slack", workspace: team, channel, thread: threadTs };
    this.log.info(
      { thread: threadId(thread), run: parsed.runId ?? null, user: userId, value: parsed.value, messageTs },
      "slack: answer feedback",
    );
    try {
      this.onFeedback?.({ thread, messageTs, runId: parsed.runId, userId, value: parsed.value });
    } catch (err) {
      this.log.warn({ err }, "slack: the feedback observer failed");
    }
    return true;
  }
}

/** Section text limit (https://docs.slack.dev/reference/block-kit/blocks/section-block). */
const SECTION_TEXT_MAX = 3000;

/**
 * The blocks of a posted-and-edited answer's last message with the feedback buttons: the message's
 * {@link messageBlocks}, then the buttons.
 */
export function answerBlocks(
  text: string,
  runId: string | undefined,
  messageTs: string,
): Record<string, unknown>[] {
  return [...messageBlocks(text), feedbackBlock(runId, messageTs)];
}

/**
 * A reply message's text as blocks: blocks replace the message's text on screen, so `text` (mrkdwn) comes
 * first — in a section when it fits one, else in a markdown block (12,000 characters,
 * https://docs.slack.dev/reference/block-kit/blocks/markdown-block) — except a last line that is the run
 * footer, which becomes a context block below it (small grey text, {@link footerBlock}).
 */
export function messageBlocks(text: string): Record<string, unknown>[] {
  const { body, footer } = splitFooter(text);
  const blocks: Record<string, unknown>[] = [];
  if (body.trim() !== "") {
    blocks.push(
      [...body].length <= SECTION_TEXT_MAX
        ? { type: "section", text: { type: "mrkdwn", text: body } }
        : { type: "markdown", text: mrkdwnToStreamMarkdown(body) },
    );
  }
  if (footer !== undefined) blocks.push(footerBlock(footer));
  return blocks;
}

/** The last reply message posted in a thread during a run, as last sent. */
export interface LastReply {
  id: string;
  text: string;
  /** A native stream (possibly continued in more messages); else one message posted and edited. */
  streamed: boolean;
}

/**
 * What the feedback buttons of each thread's current run go on: the run's last reply message (as last
 * sent) and the run's id, asked once when the run's status first shows (the worker holds the thread then).
 */
export class RunAnswers {
  private readonly last = new Map<string, LastReply>();
  private readonly runs = new Map<string, Promise<string | undefined>>();

  constructor(private readonly runIdOf: ((thread: ThreadRef) => Promise<string | undefined>) | undefined) {}

  /** A run shows its status: its id is looked up now (once per run), off the critical path. */
  runShown(thread: ThreadRef): void {
    const key = threadId(thread);
    if (this.runIdOf && !this.runs.has(key))
      this.runs.set(
        key,
        this.runIdOf(thread).catch(() => undefined),
      );
  }

  posted(thread: ThreadRef, reply: LastReply): void {
    this.last.set(threadId(thread), reply);
  }

  /** `messageId` now shows `text`; `rewritten`: a stream was stopped and the message updated as a whole. */
  edited(thread: ThreadRef, messageId: string, text: string, rewritten = false): void {
    const last = this.last.get(threadId(thread));
    if (last?.id !== messageId) return;
    last.text = text;
    if (rewritten) last.streamed = false;
  }

  deleted(thread: ThreadRef, messageId: string): void {
    if (this.last.get(threadId(thread))?.id === messageId) this.last.delete(threadId(thread));
  }

  /** The run ended: its last reply (if any) and its id (if known), forgotten here. */
  async take(thread: ThreadRef): Promise<{ last: LastReply | undefined; runId: string | undefined }> {
    const key = threadId(thread);
    const last = this.last.get(key);
    const run = this.runs.get(key);
    this.last.delete(key);
    this.runs.delete(key);
    return { last, runId: await run };
  }
}
