import type { ApprovalCard, ApprovalCardState, ChatOutbound, ChatUser, ThreadRef } from "../chat/index.js";
import type { BusEvent, EventBus } from "./bus.js";
import { threadKeys } from "./keys.js";
import { type ScriptedRedis, threadKeyList } from "./scripts.js";

/** How an approval ended. */
export type ApprovalVerdict =
  | { kind: "approved"; by: ChatUser | undefined; always: boolean }
  | { kind: "denied"; by: ChatUser | undefined }
  | { kind: "expired" }
  | { kind: "cancelled" };

/** One tool call waiting for a human. */
export interface ApprovalRequest {
  approvalId: string;
  toolCallId: string;
  toolName: string;
  /** Readable rendering of the arguments, shown on the card. */
  argumentsText: string;
  requester: ChatUser;
  signal: AbortSignal | undefined;
}

/** What the gate needs from its run. */
export interface ApprovalGateOptions {
  scripts: ScriptedRedis;
  bus: EventBus;
  prefix: string;
  thread: ThreadRef;
  threadId: string;
  runId: string;
  outbound: ChatOutbound;
  /** Users besides the requester who may decide. */
  approvers: string[];
  timeoutMs: number;
  /** How long a decided record is kept, for late clicks. */
  retentionMs: number;
  onError?: (err: unknown, operation: string) => void;
}

/**
 * Pending approvals in Redis: the record is created once (idempotently, so a resumed run finds it and the
 * card's buttons keep working), the decision arrives through pub/sub and is re-read from the record so a
 * decision made while no worker listened is not missed. No decision before expiry means deny.
 */
export class ApprovalGate {
  constructor(private readonly options: ApprovalGateOptions) {}

  private keys(approvalId: string): string[] {
    const keys = threadKeys(this.options.prefix, this.options.threadId);
    return [...threadKeyList(keys), keys.approval(approvalId)];
  }

  /** Asks (or resumes asking) and waits for the verdict. Never throws for chat failures. */
  async request(request: ApprovalRequest, waitingMessages: number): Promise<ApprovalVerdict> {
    const { scripts, timeoutMs, retentionMs } = this.options;
    const keys = this.keys(request.approvalId);
    const approvalKey = keys[keys.length - 1]!;
    const expiresAt = Date.now() + timeoutMs;
    const allowed = `,${[request.requester.id, ...this.options.approvers].join(",")},`;
    const created = (await scripts.run("tlCreateApproval", keys, [
      timeoutMs + retentionMs,
      "tool",
      request.toolName,
      "toolCallId",
      request.toolCallId,
      "runId",
      this.options.runId,
      "argumentsText",
      request.argumentsText,
      "requester",
      JSON.stringify(request.requester),
      "allowed",
      allowed,
      "expiresAt",
      expiresAt,
    ])) as string[];

    // Subscribe before reading the record so a decision between the two is not missed.
    let resolveEvent!: (event: BusEvent) => void;
    const decided = new Promise<BusEvent>((resolve) => {
      resolveEvent = resolve;
    });
    const unsubscribe = this.options.bus.on(request.approvalId, resolveEvent);
    try {
      const record = await scripts.redis.hgetall(approvalKey);
      const card = this.card(request, record, waitingMessages);
      let cardMessageId = record.cardMessageId;
      if (created[0] === "created" || !cardMessageId) {
        cardMessageId = await this.postCard(card);
        if (cardMessageId) await scripts.redis.hset(approvalKey, "cardMessageId", cardMessageId);
      }
      const verdict =
        record.status && record.status !== "pending"
          ? verdictOf(record)
          : await this.wait(request, record, decided);
      // The card update is a chat API call: keep it off the path to the tool's execution.
      void this.showVerdict(card, verdict, cardMessageId);
      return verdict;
    } finally {
      unsubscribe();
    }
  }

  private async wait(
    request: ApprovalRequest,
    record: Record<string, string>,
    decided: Promise<BusEvent>,
  ): Promise<ApprovalVerdict> {
    const expiresAt = Number(record.expiresAt);
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const expired = new Promise<"expired">((resolve) => {
      timer = setTimeout(() => resolve("expired"), Math.max(0, expiresAt - Date.now()));
    });
    const aborted = new Promise<"cancelled">((resolve) => {
      onAbort = () => resolve("cancelled");
      if (request.signal?.aborted) onAbort();
      else request.signal?.addEventListener("abort", onAbort, { once: true });
    });
    try {
      const first = await Promise.race([decided, expired, aborted]);
      if (typeof first !== "string") {
        if (first.type === "approval" && first.status !== "expired") {
          return eventVerdict(first.status, first.by);
        }
        return { kind: "expired" };
      }
      // Settle atomically: a click that landed just before wins over the timeout or the abort.
      const status = await this.options.scripts.run("tlSettleApproval", this.keys(request.approvalId), [
        first,
        Date.now(),
      ]);
      if (status === first || typeof status !== "string") return { kind: first };
      const record2 = await this.options.scripts.redis.hgetall(this.keys(request.approvalId).at(-1)!);
      return verdictOf(record2);
    } finally {
      clearTimeout(timer);
      if (onAbort) request.signal?.removeEventListener("abort", onAbort);
    }
  }

  private card(
    request: ApprovalRequest,
    record: Record<string, string>,
    waitingMessages: number,
  ): ApprovalCard {
    return {
      approvalId: request.approvalId,
      toolName: request.toolName,
      argumentsText: record.argumentsText ?? request.argumentsText,
      approvers: [request.requester.name, ...this.options.approvers.map((id) => `<@${id}>`)],
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

  private async showVerdict(card: ApprovalCard, verdict: ApprovalVerdict, messageId: string | undefined) {
    if (!messageId) return;
    const now = Date.now();
    const unknown: ChatUser = { id: "", name: "someone" };
    const state: ApprovalCardState =
      verdict.kind === "approved"
        ? { kind: "approved", by: verdict.by ?? unknown, at: now, always: verdict.always }
        : verdict.kind === "denied"
          ? { kind: "denied", by: verdict.by ?? unknown, at: now }
          : verdict.kind === "expired"
            ? { kind: "expired", at: now }
            : { kind: "cancelled", reason: "The run was stopped." };
    try {
      await this.options.outbound.updateApproval(this.options.thread, messageId, { ...card, state });
    } catch (err) {
      this.options.onError?.(err, "updateApproval");
    }
  }
}

function eventVerdict(status: string, by: ChatUser | undefined): ApprovalVerdict {
  if (status === "approved" || status === "always")
    return { kind: "approved", by, always: status === "always" };
  if (status === "denied") return { kind: "denied", by };
  if (status === "cancelled") return { kind: "cancelled" };
  return { kind: "expired" };
}

function verdictOf(record: Record<string, string>): ApprovalVerdict {
  let by: ChatUser | undefined;
  try {
    by = record.decidedBy ? (JSON.parse(record.decidedBy) as ChatUser) : undefined;
  } catch {
    by = undefined;
  }
  return eventVerdict(record.status ?? "expired", by);
}

/** The text the model reads when a call was not approved. */
export function verdictReason(verdict: ApprovalVerdict): string | undefined {
  switch (verdict.kind) {
    case "approved":
      return undefined;
    case "denied":
      return `Tool call denied by ${verdict.by?.name ?? "a user"}.`;
    case "expired":
      return "approval timed out";
    case "cancelled":
      return "Operation aborted";
  }
}
