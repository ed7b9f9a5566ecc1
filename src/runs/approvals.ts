import { randomBytes } from "node:crypto";
import {
  type ApprovalCard,
  type ApprovalCardState,
  argumentChanges,
  type ChatDialect,
  type ChatOutbound,
  type ChatUser,
  type ThreadRef,
} from "../chat/index.js";
import { approvalEventKey, type EventBus } from "./bus.js";
import type { ThreadScripts } from "./thread-scripts.js";
import { parseUser, type ThreadStore } from "./thread-store.js";

/** How an approval ended. */
export type ApprovalVerdict =
  /**
   * `edited`: "Edit and approve" — the approver's arguments (validated by the gateway against the stored
   * schema); the call runs with them instead of the model's. Only with `always: false`.
   */
  | {
      kind: "approved";
      by: ChatUser | undefined;
      always: false | "requester" | "thread";
      edited?: Record<string, unknown>;
    }
  /** `reason`: what the denier wrote, if anything (reaches the model). */
  | { kind: "denied"; by: ChatUser | undefined; reason?: string }
  | { kind: "expired" }
  | { kind: "cancelled" }
  /** This run lost its lease while asking: another claim owns the thread now. */
  | { kind: "lost" };

/** One tool call waiting for a human. */
export interface ApprovalRequest {
  /** The run-unique key of the call (see `ThreadKeys.calls`). */
  callKey: string;
  toolCallId: string;
  toolName: string;
  /** Readable rendering of the arguments, shown on the card. */
  argumentsText: string;
  /** The call's arguments: what an edit form starts with, and what the card's "changed" lines compare to. */
  arguments: Record<string, unknown>;
  /** The tool's parameters as JSON Schema text (the gateway validates edits with it); none = any object. */
  schema?: string;
  requester: ChatUser;
  signal: AbortSignal | undefined;
  /** This tool's own timeout (ms, or "none" to wait for a decision); default the gate's `timeoutMs`. */
  timeoutMs?: number | "none";
}

/** An approval whose record exists and whose card is shown, not yet waited for (see {@link ApprovalGate.open}). */
export interface OpenedApproval {
  kind: "open";
  approvalId: string;
  request: ApprovalRequest;
  record: Record<string, string>;
  card: ApprovalCard;
  cardMessageId: string | undefined;
  wakeup: Wakeup;
  release: () => void;
}

/** What the gate needs from its run. */
export interface ApprovalGateOptions {
  scripts: ThreadScripts;
  store: ThreadStore;
  bus: EventBus;
  thread: ThreadRef;
  threadId: string;
  runId: string;
  /** The run's fencing token: a gate of a claim that lost the lease creates no record and posts no card. */
  token: () => string;
  /** Approval ids the run's earlier claims created, by call key (from the start script). */
  known: Record<string, string>;
  outbound: ChatOutbound;
  /** Users besides the requester who may decide. */
  approvers: string[];
  timeoutMs: number;
  /** After this long without a decision the requester is mentioned once in the thread; 0 = never. */
  reminderMs: number;
  /** How long a decided record is kept, for late clicks; also the thread's retention. */
  retentionMs: number;
  onError?: (err: unknown, operation: string) => void;
}

/**
 * The abort reason of a request's signal when its card is withdrawn because the loop never made the call
 * (see `ToolApprovalHook.withdrawUnclaimed`): the card then says so instead of "The run was stopped."
 */
export const APPROVAL_WITHDRAWN = "threadline:approval-withdrawn";

/** A new approval id: random, so it says nothing about transcript positions and never repeats across threads. */
export function newApprovalId(): string {
  return randomBytes(9).toString("base64url");
}

/**
 * Pending approvals in Redis. The record is created once per call (fenced and idempotent: a resumed run
 * finds the id its predecessor used, so the card's buttons keep working). A decision is state in the record:
 * the pub/sub event only wakes the waiter, which then reads the verdict from the thread's own record — and
 * {@link ApprovalGate.recheck} (on every heartbeat and bus reconnect) reads it too, so a click published
 * while the subscriber reconnected is not missed. No decision before expiry means deny.
 */
export class ApprovalGate {
  private readonly waiting = new Map<string, () => void>();
  /** Approvals whose wait ended because their card was withdrawn (see {@link APPROVAL_WITHDRAWN}). */
  private readonly withdrawn = new Set<string>();

  constructor(private readonly options: ApprovalGateOptions) {}

  /** Reads every pending record again and wakes the waiters whose request was decided. Never throws. */
  recheck(): void {
    for (const wake of this.waiting.values()) wake();
  }

  /** Asks (or resumes asking) and waits for the verdict. Never throws for chat failures. */
  async request(request: ApprovalRequest, waitingMessages: number): Promise<ApprovalVerdict> {
    const opened = await this.open(request, waitingMessages);
    return opened.kind === "lost" ? opened : this.verdict(opened);
  }

  /**
   * Creates (or finds) the call's record and shows its card, without waiting: a batch's cards all go up
   * before its first wait, so each can be decided on its own. Pass the result to {@link ApprovalGate.verdict}
   * exactly once (it releases the subscription). May reject on Redis errors (nothing to release then).
   */
  async open(request: ApprovalRequest, waitingMessages: number): Promise<OpenedApproval | { kind: "lost" }> {
    const { scripts, threadId, retentionMs } = this.options;
    const timeoutMs = request.timeoutMs ?? this.options.timeoutMs;
    const askedAt = Date.now();
    const approvalId =
      this.options.known[request.callKey] ??
      (await this.options.store.approvalIdOf(threadId, request.callKey)) ??
      newApprovalId();
    this.options.known[request.callKey] = approvalId;
    const created = await scripts.createApproval(
      threadId,
      {
        token: this.options.token(),
        callKey: request.callKey,
        approvalId,
        ttlMs: timeoutMs === "none" ? 0 : timeoutMs + retentionMs,
        retention: retentionMs,
      },
      {
        tool: request.toolName,
        toolCallId: request.toolCallId,
        runId: this.options.runId,
        argumentsText: request.argumentsText,
        arguments: argumentsJsonOf(request.arguments),
        ...(request.schema ? { schema: request.schema } : {}),
        requester: JSON.stringify(request.requester),
        requesterId: request.requester.id,
        allowed: `,${[request.requester.id, ...this.options.approvers].join(",")},`,
        // 0: no timeout (the card waits for a decision or a stop).
        expiresAt: timeoutMs === "none" ? 0 : askedAt + timeoutMs,
        askedAt,
      },
    );
    if (created.kind === "lost") return { kind: "lost" };

    // Listen before reading the record so a decision between the two is not missed.
    const wakeup = new Wakeup();
    const unsubscribe = this.options.bus.on(approvalEventKey(threadId, approvalId), () => wakeup.wake());
    this.waiting.set(approvalId, () => wakeup.wake());
    const release = () => {
      this.waiting.delete(approvalId);
      unsubscribe();
    };
    try {
      const record = await this.options.store.approvalRecord(threadId, approvalId);
      const card = this.card(approvalId, request, record, waitingMessages);
      let cardMessageId = record.cardMessageId;
      if (created.kind === "created" || !cardMessageId) {
        cardMessageId = await this.postCard(card);
        if (cardMessageId) await this.options.store.setApprovalCard(threadId, approvalId, cardMessageId);
      }
      return { kind: "open", approvalId, request, record, card, cardMessageId, wakeup, release };
    } catch (err) {
      release();
      throw err;
    }
  }

  /** Waits for the verdict of an opened approval and shows it on the card. May reject on Redis errors. */
  async verdict(opened: OpenedApproval): Promise<ApprovalVerdict> {
    try {
      const verdict = await this.wait(opened.approvalId, opened.request, opened.record, opened.wakeup);
      // The card update is a chat API call: keep it off the path to the tool's execution.
      if (verdict.kind !== "lost") {
        void this.showVerdict(opened.card, verdict, opened.cardMessageId, opened.request.arguments);
      }
      return verdict;
    } finally {
      opened.release();
    }
  }

  private async wait(
    approvalId: string,
    request: ApprovalRequest,
    first: Record<string, string>,
    wakeup: Wakeup,
  ): Promise<ApprovalVerdict> {
    const { scripts, store, threadId } = this.options;
    const expiresAt = Number(first.expiresAt) || 0;
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const reminder = this.scheduleReminder(approvalId, request, first, expiresAt);
    const ended = new Promise<"expired" | "cancelled">((resolve) => {
      if (expiresAt > 0) timer = setTimeout(() => resolve("expired"), Math.max(0, expiresAt - Date.now()));
      onAbort = () => {
        if (request.signal?.reason === APPROVAL_WITHDRAWN) this.withdrawn.add(approvalId);
        resolve("cancelled");
      };
      if (request.signal?.aborted) onAbort();
      else request.signal?.addEventListener("abort", onAbort, { once: true });
    });
    try {
      let record = first;
      for (;;) {
        if (record.status && record.status !== "pending") return verdictOf(record);
        const next = await Promise.race([wakeup.wait().then(() => "woken" as const), ended]);
        if (next === "woken") {
          // The event (or a recheck) only says "look": the verdict is what this thread's record says.
          record = await store.approvalRecord(threadId, approvalId);
          continue;
        }
        // Settle atomically: a click that landed just before wins over the timeout or the abort.
        const status = await scripts.settleApproval(threadId, approvalId, {
          status: next,
          now: Date.now(),
          approvalId,
          retention: this.options.retentionMs,
        });
        if (status === next || status === undefined) return { kind: next };
        return verdictOf(await store.approvalRecord(threadId, approvalId));
      }
    } finally {
      clearTimeout(timer);
      clearTimeout(reminder);
      if (onAbort) request.signal?.removeEventListener("abort", onAbort);
    }
  }

  /**
   * Mentions the requester once when the card waited `reminderMs` since it was asked (also across a resumed
   * run: the record remembers the reminder), unless it expires first.
   */
  private scheduleReminder(
    approvalId: string,
    request: ApprovalRequest,
    record: Record<string, string>,
    expiresAt: number,
  ): NodeJS.Timeout | undefined {
    const { reminderMs } = this.options;
    if (reminderMs <= 0 || record.remindedAt) return undefined;
    const remindAt = (Number(record.askedAt) || Date.now()) + reminderMs;
    if (expiresAt > 0 && remindAt >= expiresAt) return undefined;
    return setTimeout(() => void this.remind(approvalId, request), Math.max(0, remindAt - Date.now()));
  }

  private async remind(approvalId: string, request: ApprovalRequest): Promise<void> {
    const { store, threadId, outbound, thread } = this.options;
    try {
      if (!(await store.claimApprovalReminder(threadId, approvalId, Date.now()))) return;
      const text = approvalReminderText(outbound.dialect, request.requester, request.toolName);
      if (outbound.postNotifying) await outbound.postNotifying(thread, text, [request.requester.id]);
      else await outbound.post(thread, text);
    } catch (err) {
      this.options.onError?.(err, "approvalReminder");
    }
  }

  private card(
    approvalId: string,
    request: ApprovalRequest,
    record: Record<string, string>,
    waitingMessages: number,
  ): ApprovalCard {
    return {
      approvalId,
      toolName: request.toolName,
      argumentsText: record.argumentsText ?? request.argumentsText,
      approvers: [
        request.requester.name,
        ...this.options.approvers.map((id) => this.options.outbound.dialect.mention(id)),
      ],
      requesterName: request.requester.name,
      expiresAt: Number(record.expiresAt),
      state: { kind: "pending", waitingMessages },
    };
  }

  private async postCard(card: ApprovalCard): Promise<string | undefined> {
    try {
      return (await this.options.outbound.postApproval(this.options.thread, card)).id;
    } catch (err) {
      this.options.onError?.(err, "postApproval");
      return undefined;
    }
  }

  private async showVerdict(
    card: ApprovalCard,
    verdict: ApprovalVerdict,
    messageId: string | undefined,
    original: Record<string, unknown>,
  ) {
    const withdrawn = this.withdrawn.delete(card.approvalId);
    if (!messageId) return;
    const now = Date.now();
    const unknown: ChatUser = { id: "", name: "someone" };
    const state: ApprovalCardState =
      verdict.kind === "approved"
        ? {
            kind: "approved",
            by: verdict.by ?? unknown,
            at: now,
            always: verdict.always !== false,
            ...(verdict.always ? { scope: verdict.always } : {}),
            ...(verdict.edited ? { changes: argumentChanges(original, verdict.edited) } : {}),
          }
        : verdict.kind === "denied"
          ? {
              kind: "denied",
              by: verdict.by ?? unknown,
              at: now,
              ...(verdict.reason ? { reason: verdict.reason } : {}),
            }
          : verdict.kind === "expired"
            ? { kind: "expired", at: now }
            : {
                kind: "cancelled",
                reason: withdrawn ? "The call was not made." : "The run was stopped.",
              };
    try {
      await this.options.outbound.updateApproval(this.options.thread, messageId, { ...card, state });
    } catch (err) {
      this.options.onError?.(err, "updateApproval");
    }
  }
}

/** A wake-up that is not lost when it comes while nobody waits: the next `wait` returns at once. */
export class Wakeup {
  private pending = false;
  private resolve: (() => void) | undefined;

  wake(): void {
    this.pending = true;
    this.resolve?.();
  }

  wait(): Promise<void> {
    if (this.pending) {
      this.pending = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      this.resolve = () => {
        this.pending = false;
        this.resolve = undefined;
        resolve();
      };
    });
  }
}

function verdictOf(record: Record<string, string>): ApprovalVerdict {
  const by = parseUser(record.decidedBy);
  switch (record.status) {
    case "approved": {
      const edited = parseArguments(record.editedArguments);
      return edited
        ? { kind: "approved", by, always: false, edited }
        : { kind: "approved", by, always: false };
    }
    case "always":
      return { kind: "approved", by, always: "requester" };
    case "alwaysThread":
      return { kind: "approved", by, always: "thread" };
    case "denied":
      return record.reason ? { kind: "denied", by, reason: record.reason } : { kind: "denied", by };
    case "cancelled":
      return { kind: "cancelled" };
    default:
      return { kind: "expired" };
  }
}

/** An object parsed from JSON text; `undefined` for none or anything else. */
function parseArguments(text: string | undefined): Record<string, unknown> | undefined {
  if (!text) return undefined;
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === "object" && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

function argumentsJsonOf(args: Record<string, unknown>): string {
  try {
    return JSON.stringify(args) ?? "{}";
  } catch {
    return "{}";
  }
}

/** The one reminder posted in the thread: mentions the requester (a notification on their phone). */
export function approvalReminderText(dialect: ChatDialect, requester: ChatUser, toolName: string): string {
  return `${dialect.mention(requester.id, requester.name)} \`${toolName}\` is waiting for your approval: use Approve or Deny on the card above.`;
}

/** The text the model reads when a call was not approved. */
export function verdictReason(verdict: ApprovalVerdict): string | undefined {
  switch (verdict.kind) {
    case "approved":
      return undefined;
    case "denied":
      return verdict.reason
        ? `Tool call denied by ${verdict.by?.name ?? "a user"}: ${verdict.reason}`
        : `Tool call denied by ${verdict.by?.name ?? "a user"}.`;
    case "expired":
      return "approval timed out";
    case "cancelled":
    case "lost":
      return "Operation aborted";
  }
}
