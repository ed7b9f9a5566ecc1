import { randomUUID } from "node:crypto";
import type { Redis } from "ioredis";
import {
  type ApprovalDecision,
  type ChatUser,
  threadId as encodeThreadId,
  type IncomingMessage,
  type ThreadRef,
} from "../chat/index.js";
import type { Disposition, RunsConfig } from "./config.js";
import { eventsChannel, threadKeys } from "./keys.js";
import type { RunQueue } from "./queue.js";
import { type ScriptedRedis, threadKeyList, withScripts } from "./scripts.js";
import { parseUser } from "./thread-store.js";
import { toUserMessage } from "./user-message.js";

/** What `submit` did with a message. */
export type SubmitResult =
  | { kind: "started"; runId: string }
  | { kind: "queued"; runId: string; disposition: Disposition }
  | { kind: "refused"; runId: string; reason: string }
  | { kind: "stopping"; runId: string }
  | { kind: "duplicate" }
  | { kind: "ignored" };

/** What a click on an approval button did. */
export type DecideResult =
  | { kind: "accepted"; status: "approved" | "denied" | "always" }
  | { kind: "already"; status: string; by: ChatUser | undefined }
  | { kind: "forbidden" }
  | { kind: "expired" }
  | { kind: "unknown" };

/** True for a reply that means "stop the run". */
export function isStopCommand(text: string): boolean {
  return text.trim().toLowerCase() === "stop";
}

/**
 * The gateway's side of runs: every operation is one atomic script on the thread's keys, so gateways and
 * workers agree on whether a message starts a run, is queued, or was seen before.
 */
export class Intake {
  private readonly scripts: ScriptedRedis;

  constructor(
    redis: Redis,
    private readonly queue: RunQueue,
    private readonly config: RunsConfig,
  ) {
    this.scripts = withScripts(redis);
  }

  private keys(thread: ThreadRef | string): string[] {
    const id = typeof thread === "string" ? thread : encodeThreadId(thread);
    return threadKeyList(threadKeys(this.config.prefix, id));
  }

  /**
   * Handles one user message in an engaged thread or mentioning the bot: starts a run (and enqueues its
   * job), queues it for the active run, refuses it (queue full), treats `stop` as a stop request, or
   * recognizes a platform retry / replay (`duplicate`). Idempotent per message id.
   */
  async submit(message: IncomingMessage): Promise<SubmitResult> {
    const id = encodeThreadId(message.thread);
    const newRunId = randomUUID();
    const reply = (await this.scripts.run("tlSubmit", this.keys(id), [
      message.id,
      JSON.stringify(toUserMessage(message)),
      this.config.defaultDisposition,
      this.config.queueCap,
      Date.now(),
      this.config.retentionMs,
      newRunId,
      this.config.startLeaseMs,
      message.mentionsBot ? 1 : 0,
      this.config.requireMentionWhenIdle ? 1 : 0,
      JSON.stringify(message.author),
      isStopCommand(message.text) ? 1 : 0,
      eventsChannel(this.config.prefix),
    ])) as string[];
    const [kind, runId = "", disposition] = reply;
    switch (kind) {
      case "started":
        await this.queue.add("run", { threadId: id, runId }, { jobId: runId });
        return { kind: "started", runId };
      case "queued":
        return { kind: "queued", runId, disposition: disposition as Disposition };
      case "refused":
        return {
          kind: "refused",
          runId,
          reason: `Too many messages are waiting for this run (limit ${this.config.queueCap}); this one was not queued.`,
        };
      case "stop":
        return { kind: "stopping", runId };
      case "duplicate":
        return { kind: "duplicate" };
      default:
        return { kind: "ignored" };
    }
  }

  /** Moves a queued message between steer and follow-up. False once it was delivered (or unknown). */
  async setDisposition(thread: ThreadRef, messageId: string, disposition: Disposition): Promise<boolean> {
    return (await this.scripts.run("tlSetDisposition", this.keys(thread), [messageId, disposition])) === 1;
  }

  /** Removes a queued message its author deleted. False once delivered. */
  async withdraw(thread: ThreadRef, messageId: string): Promise<boolean> {
    return (await this.scripts.run("tlWithdraw", this.keys(thread), [messageId])) === 1;
  }

  /** Replaces the text of a queued message its author edited. False once delivered. */
  async edit(message: IncomingMessage): Promise<boolean> {
    const body = JSON.stringify(toUserMessage(message));
    return (await this.scripts.run("tlEdit", this.keys(message.thread), [message.id, body])) === 1;
  }

  /** Asks the thread's active run to stop. Returns the run id, or undefined when the thread is idle. */
  async stop(thread: ThreadRef, by: ChatUser): Promise<string | undefined> {
    const reply = await this.scripts.run("tlStop", this.keys(thread), [
      JSON.stringify(by),
      eventsChannel(this.config.prefix),
    ]);
    return typeof reply === "string" ? reply : undefined;
  }

  /** Records a click on an approval card: first valid decision wins; users not allowed change nothing. */
  async decide(
    thread: ThreadRef,
    approvalId: string,
    user: ChatUser,
    decision: ApprovalDecision,
  ): Promise<DecideResult> {
    const id = encodeThreadId(thread);
    const keys = threadKeys(this.config.prefix, id);
    const reply = (await this.scripts.run(
      "tlDecide",
      [...threadKeyList(keys), keys.approval(approvalId)],
      [
        user.id,
        JSON.stringify(user),
        decision,
        Date.now(),
        eventsChannel(this.config.prefix),
        approvalId,
        id,
      ],
    )) as string[];
    const [kind, status = "", by = ""] = reply;
    if (kind === "accepted") return { kind, status: status as "approved" | "denied" | "always" };
    if (kind === "already") return { kind, status, by: parseUser(by) };
    if (kind === "forbidden" || kind === "expired") return { kind };
    return { kind: "unknown" };
  }

  /** The state of a message: queued | inflight | delivered | withdrawn | refused | notprocessed | command. */
  async messageState(thread: ThreadRef, messageId: string): Promise<string | undefined> {
    const keys = threadKeys(this.config.prefix, encodeThreadId(thread));
    return (await this.scripts.redis.hget(keys.state, messageId)) ?? undefined;
  }

  /** The platform user id of a queued (or delivered) message's author, if known. */
  async messageAuthor(thread: ThreadRef, messageId: string): Promise<string | undefined> {
    const keys = threadKeys(this.config.prefix, encodeThreadId(thread));
    const body = await this.scripts.redis.hget(keys.body, messageId);
    if (!body) return undefined;
    try {
      return (JSON.parse(body) as { authorId?: string }).authorId;
    } catch {
      return undefined;
    }
  }

  /** True for the requester of the thread's latest run and the configured approvers. */
  async mayControl(thread: ThreadRef, userId: string): Promise<boolean> {
    if (this.config.approvers.includes(userId)) return true;
    const keys = threadKeys(this.config.prefix, encodeThreadId(thread));
    const requester = parseUser((await this.scripts.redis.hget(keys.meta, "requester")) ?? undefined);
    return requester?.id === userId;
  }

  /** The active run of a thread, if any. */
  async activeRun(thread: ThreadRef): Promise<string | undefined> {
    const keys = threadKeys(this.config.prefix, encodeThreadId(thread));
    return (await this.scripts.redis.get(keys.lease)) ?? undefined;
  }
}
