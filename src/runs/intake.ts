import { randomUUID } from "node:crypto";
import {
  type ApprovalDecision,
  argumentsJson,
  type ChatUser,
  threadId as encodeThreadId,
  type IncomingMessage,
  type ThreadRef,
} from "../chat/index.js";
import { checkEditedArguments } from "./approval-edit.js";
import { DEFAULT_STOP_WORDS, type Disposition, type RunsConfig } from "./config.js";
import { eventsChannel, pendingStartMember, pendingStartsKey } from "./keys.js";
import { addRunJob, type RunQueue } from "./queue.js";
import type { RedisClient } from "./redis-client.js";
import { ThreadScripts } from "./thread-scripts.js";
import { parseSettingCommand, settingField, type ThreadSettingName } from "./thread-settings.js";
import { parseUser, ThreadStore } from "./thread-store.js";
import { toUserMessage } from "./user-message.js";

/** What `submit` did with a message. */
export type SubmitResult =
  | { kind: "started"; runId: string }
  /**
   * `waitingApprovals`: the tools whose approval cards wait for a decision in this thread (sorted, may
   * repeat); the message is read after they are decided.
   */
  | { kind: "queued"; runId: string; disposition: Disposition; waitingApprovals: string[] }
  | { kind: "refused"; runId: string; reason: string }
  | { kind: "stopping"; runId: string }
  /** A stop word from someone who may not stop the run: nothing changed; tell them privately. */
  | { kind: "stopRefused"; runId: string; reason: string }
  /** A stop word in an idle thread: nothing starts; tell the author privately. */
  | { kind: "stopIdle"; reason: string }
  /** A setting command (`!set`, thread-settings.ts) was stored; tell the author `notice` privately. */
  | { kind: "setting"; name: ThreadSettingName; value: string; notice: string }
  /** A setting command that could not be applied: nothing changed; tell the author `reason` privately. */
  | { kind: "settingRefused"; reason: string }
  | { kind: "duplicate" }
  | { kind: "ignored" };

/** What a stop request (🛑, Slack's Stop button) did. */
export type StopResult =
  | { kind: "stopping"; runId: string }
  | { kind: "refused"; runId: string; reason: string }
  | { kind: "idle" };

/** What a click on an approval button did. */
export type DecideResult =
  | { kind: "accepted"; status: "approved" | "denied" | "always" | "alwaysThread" }
  | { kind: "already"; status: string; by: ChatUser | undefined }
  | { kind: "forbidden" }
  | { kind: "expired" }
  | { kind: "unknown" }
  /** Edit and approve with arguments that do not fit the tool's schema: nothing decided; `text` says why. */
  | { kind: "invalid"; text: string };

/** What a deny/edit form may show (see {@link Intake.approvalForm}); anything else is why it may not open. */
export type FormResult =
  | { kind: "form"; toolName: string; argumentsJson: string }
  | Exclude<DecideResult, { kind: "accepted" } | { kind: "invalid" }>;

/** The longest denial reason kept; a longer one is cut (with "…") before it is stored. */
export const DENY_REASON_MAX_CHARS = 500;

/** The notice for someone who may not stop a run. */
export const STOP_REFUSED_TEXT =
  "You can't stop this run: only the person who asked and the configured approvers can.";
/** The notice for a stop word in a thread where nothing runs. */
export const STOP_IDLE_TEXT = "Nothing is running in this thread, so there is nothing to stop.";

function normalizeCommand(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s]/gu, " ")
    .replace(/\s+/g, " ")
    .trim();
}

/**
 * A reply that starts with `prefix` (non-empty) is an interrupt: its text without the prefix, else undefined.
 */
export function stripInterruptPrefix(text: string, prefix: string): string | undefined {
  if (prefix === "") return undefined;
  const trimmed = text.trimStart();
  return trimmed.startsWith(prefix) ? trimmed.slice(prefix.length).trimStart() : undefined;
}

/** True for a reply that means "stop the run": one of `words` (default {@link DEFAULT_STOP_WORDS}), whole. */
export function isStopCommand(text: string, words: readonly string[] = DEFAULT_STOP_WORDS): boolean {
  const normalized = normalizeCommand(text);
  return normalized !== "" && words.some((word) => normalizeCommand(word) === normalized);
}

/**
 * The gateway's side of runs: every operation is one atomic script on the thread's keys, so gateways and
 * workers agree on whether a message starts a run, is queued, or was seen before.
 */
export class Intake {
  private readonly scripts: ThreadScripts;
  private readonly store: ThreadStore;

  constructor(
    redis: RedisClient,
    private readonly queue: RunQueue,
    private readonly config: RunsConfig,
  ) {
    this.scripts = new ThreadScripts(redis, config.prefix);
    this.store = new ThreadStore(redis, config.prefix);
  }

  /**
   * Handles one user message in an engaged thread or mentioning the bot: starts a run (and enqueues its
   * job), queues it for the active run, refuses it (queue full), treats a stop word as a stop request and
   * a setting command as a change of the thread's settings (from the next run on), or recognizes a platform retry / replay (`duplicate`). Idempotent per message id, so a caller may retry
   * it after any failure. A decided start always gets its job: the start is marked in doubt before the
   * script runs, a retry of a start whose job add failed adds it again (the job id is the run id, so BullMQ
   * keeps one), and the start sweeper adds it when the gateway died in between.
   * @throws on Redis errors (nothing or everything of the decision was stored; retrying is safe).
   */
  async submit(message: IncomingMessage): Promise<SubmitResult> {
    const id = encodeThreadId(message.thread);
    const newRunId = randomUUID();
    const marker = pendingStartMember(id, message.id);
    // "!! …" (the configured prefix) asks for an interrupt; the model reads the text without it.
    const interruptText = stripInterruptPrefix(message.text, this.config.interruptPrefix);
    const text = interruptText ?? message.text;
    const setting = parseSettingCommand(message.text);
    const marked = this.scripts.redis.zadd(pendingStartsKey(this.config.prefix), Date.now(), marker);
    marked.catch(() => {}); // reported by the submit below, which fails the same way
    const reply = await this.scripts.submit(id, {
      msgId: message.id,
      body: JSON.stringify(toUserMessage({ ...message, text })),
      defaultDisposition: interruptText !== undefined ? "interrupt" : this.config.defaultDisposition,
      cap: this.config.queueCap,
      now: Date.now(),
      retention: this.config.retentionMs,
      newRun: newRunId,
      startLeaseMs: this.config.startLeaseMs,
      mentions: message.mentionsBot ? 1 : 0,
      requireMention: this.config.requireMentionWhenIdle ? 1 : 0,
      author: JSON.stringify(message.author),
      authorId: message.author.id,
      isApprover: this.config.approvers.includes(message.author.id) ? 1 : 0,
      isStop: isStopCommand(text, this.config.stopWords) ? 1 : 0,
      isSetting: setting ? 1 : 0,
      setField: setting?.kind === "set" ? settingField(setting.name) : "",
      setValue: setting?.kind === "set" ? setting.value : "",
      channel: eventsChannel(this.config.prefix),
    });
    await marked;
    if (reply.kind === "started" || (reply.kind === "duplicate" && reply.runWithoutJob)) {
      const runId = reply.kind === "started" ? reply.runId : reply.runWithoutJob!;
      await addRunJob(this.queue, id, runId);
    }
    this.clearPendingStart(marker);
    switch (reply.kind) {
      case "started":
        return { kind: "started", runId: reply.runId };
      case "queued":
        return {
          kind: "queued",
          runId: reply.runId,
          disposition: reply.disposition as Disposition,
          waitingApprovals: reply.waitingApprovals,
        };
      case "refused":
        return {
          kind: "refused",
          runId: reply.runId,
          reason: `Too many messages are waiting for this run (limit ${this.config.queueCap}); this one was not queued.`,
        };
      case "stopping":
        return { kind: "stopping", runId: reply.runId };
      case "stopRefused":
        return { kind: "stopRefused", runId: reply.runId, reason: STOP_REFUSED_TEXT };
      case "stopIdle":
        return { kind: "stopIdle", reason: STOP_IDLE_TEXT };
      case "setting":
        if (setting?.kind === "set") return { ...setting, kind: "setting" };
        return { kind: "settingRefused", reason: setting?.reason ?? "" };
      case "duplicate":
        return { kind: "duplicate" };
      default:
        return { kind: "ignored" };
    }
  }

  /** The start is no longer in doubt; not awaited (a leftover entry only costs the sweeper a look). */
  private clearPendingStart(marker: string): void {
    this.scripts.redis.zrem(pendingStartsKey(this.config.prefix), marker).catch(() => {});
  }

  /** Moves a queued message between steer, follow-up and interrupt. False once it was delivered (or unknown). */
  async setDisposition(thread: ThreadRef, messageId: string, disposition: Disposition): Promise<boolean> {
    return (await this.changeDisposition(thread, messageId, disposition)) !== undefined;
  }

  /**
   * Like {@link Intake.setDisposition}, answering the previous disposition (the mark to take back) when the
   * change took effect. A steer or interrupt reaches the worker of the active run at once (an event on the
   * bus; the disposition in Redis is the state it reads again on its heartbeat).
   */
  async changeDisposition(
    thread: ThreadRef,
    messageId: string,
    disposition: Disposition,
  ): Promise<Disposition | undefined> {
    const previous = await this.scripts.setDisposition(encodeThreadId(thread), {
      msgId: messageId,
      disposition,
      channel: eventsChannel(this.config.prefix),
    });
    return previous as Disposition | undefined;
  }

  /** Removes a queued message its author deleted. False once delivered. */
  async withdraw(thread: ThreadRef, messageId: string): Promise<boolean> {
    return this.scripts.withdraw(encodeThreadId(thread), { msgId: messageId });
  }

  /** Replaces the text of a queued message its author edited. False once delivered. */
  async edit(message: IncomingMessage): Promise<boolean> {
    const body = JSON.stringify(toUserMessage(message));
    return this.scripts.edit(encodeThreadId(message.thread), { msgId: message.id, body });
  }

  /**
   * Asks the thread's active run to stop on behalf of `by`: only the run's requester and the approvers may
   * (the same rule for 🛑, a stop word and Slack's Stop button). Idle threads change nothing.
   */
  async stop(thread: ThreadRef, by: ChatUser): Promise<StopResult> {
    const reply = await this.scripts.stop(encodeThreadId(thread), {
      by: JSON.stringify(by),
      byId: by.id,
      isApprover: this.config.approvers.includes(by.id) ? 1 : 0,
      channel: eventsChannel(this.config.prefix),
    });
    if (reply.kind === "refused") return { ...reply, reason: STOP_REFUSED_TEXT };
    return reply;
  }

  /**
   * Records a click on an approval card of `thread`: first valid decision wins; users not allowed change
   * nothing. The record is looked up under the thread's own keys, so a click can only decide a request of
   * the thread it was made in; only approvers may allow a tool for everyone in the thread. A denial may
   * carry a `reason` (trimmed; cut to {@link DENY_REASON_MAX_CHARS}), which the model reads in the error
   * result: "Tool call denied by Bob: <reason>". Ignored for other decisions.
   */
  async decide(
    thread: ThreadRef,
    approvalId: string,
    user: ChatUser,
    decision: ApprovalDecision,
    reason?: string,
    editedArguments?: string,
  ): Promise<DecideResult> {
    const id = encodeThreadId(thread);
    let why = decision === "deny" ? (reason ?? "").trim() : "";
    if (why.length > DENY_REASON_MAX_CHARS) why = `${why.slice(0, DENY_REASON_MAX_CHARS - 1)}…`;
    let edited = "";
    if (decision === "approve" && editedArguments !== undefined) {
      // Validate before deciding (the form shows the error; the card stays pending). Someone who may not
      // decide is not told about the schema: the script below refuses them.
      const record = await this.store.approvalRecord(id, approvalId);
      if (record.status === "pending" && this.mayDecide(record, user.id)) {
        const checked = checkEditedArguments(record.tool ?? "", record.schema, editedArguments);
        if (checked.kind === "invalid") return checked;
        edited = JSON.stringify(checked.arguments);
      }
    }
    const reply = await this.scripts.decide(id, {
      userId: user.id,
      user: JSON.stringify(user),
      decision,
      now: Date.now(),
      channel: eventsChannel(this.config.prefix),
      approvalId,
      threadId: id,
      isApprover: this.config.approvers.includes(user.id) ? 1 : 0,
      retention: this.config.retentionMs,
      reason: why,
      edited,
    });
    if (reply.kind === "accepted") return { kind: "accepted", status: reply.status as "approved" };
    if (reply.kind === "already")
      return { kind: "already", status: reply.status, by: parseUser(reply.decidedBy) };
    return reply;
  }

  /**
   * Whether a deny/edit form may open for `user` on this approval, and what it starts with: the same rules
   * as a click (decided, expired, unknown, not allowed → why not). Decides nothing; the submission is
   * checked again, atomically, by {@link Intake.decide}. May reject on Redis errors.
   */
  async approvalForm(thread: ThreadRef, approvalId: string, user: ChatUser): Promise<FormResult> {
    const record = await this.store.approvalRecord(encodeThreadId(thread), approvalId);
    if (!record.status) return { kind: "unknown" };
    if (record.status !== "pending") {
      return { kind: "already", status: record.status, by: parseUser(record.decidedBy) };
    }
    if (!this.mayDecide(record, user.id)) return { kind: "forbidden" };
    const expiresAt = Number(record.expiresAt) || 0;
    if (expiresAt > 0 && Date.now() >= expiresAt) return { kind: "expired" };
    let args: Record<string, unknown> = {};
    try {
      args = JSON.parse(record.arguments ?? "{}") as Record<string, unknown>;
    } catch {
      // A record without readable arguments: the form starts empty.
    }
    return { kind: "form", toolName: record.tool ?? "", argumentsJson: argumentsJson(args) };
  }

  private mayDecide(record: Record<string, string>, userId: string): boolean {
    return this.config.approvers.includes(userId) || (record.allowed ?? "").includes(`,${userId},`);
  }

  /** The state of a message: queued | inflight | delivered | withdrawn | refused | notprocessed | command. */
  messageState(thread: ThreadRef, messageId: string): Promise<string | undefined> {
    return this.store.messageState(encodeThreadId(thread), messageId);
  }

  /** The platform user id of a queued (or delivered) message's author, if known. */
  messageAuthor(thread: ThreadRef, messageId: string): Promise<string | undefined> {
    return this.store.messageAuthor(encodeThreadId(thread), messageId);
  }

  /** True for the requester of the thread's latest run and the configured approvers. */
  async mayControl(thread: ThreadRef, userId: string): Promise<boolean> {
    if (this.config.approvers.includes(userId)) return true;
    return (await this.store.requester(encodeThreadId(thread)))?.id === userId;
  }

  /** The active run of a thread, if any. */
  activeRun(thread: ThreadRef): Promise<string | undefined> {
    return this.store.activeRun(encodeThreadId(thread));
  }
}
