import type { AgentLoopConfig, AgentMessage } from "../agent/index.js";
import { renderArguments } from "../chat/index.js";
import { type ApprovalGate, verdictReason } from "./approvals.js";
import { callKey } from "./recovery.js";
import type { RunObserver, RunTool, ToolRunContext } from "./setup.js";
import type { ThreadStore } from "./thread-store.js";

/** Longest argument rendering shown on a card. */
const CARD_ARGUMENTS_CHARS = 2500;

export interface ToolApprovalOptions {
  tools: RunTool[];
  ctx: ToolRunContext;
  gate: ApprovalGate;
  /** The run's live transcript (the assistant message is in it when its calls are prepared). */
  transcript: AgentMessage[];
  store: ThreadStore;
  observer?: RunObserver;
}

/**
 * A `beforeToolCall` that applies each tool's approval policy: "never" runs, "ask" waits for a decision
 * (unless the thread always allows the tool for this run's requester, or for everyone); a denial, timeout
 * or abort blocks the call with a reason the model can read.
 */
export function createToolApproval(
  options: ToolApprovalOptions,
): NonNullable<AgentLoopConfig["beforeToolCall"]> {
  const byName = new Map(options.tools.map((tool) => [tool.name, tool]));
  return async ({ assistantMessage, toolCall, args }, signal) => {
    const tool = byName.get(toolCall.name);
    const policy = tool?.approval ?? "never";
    const needed = typeof policy === "function" ? await policy(args, options.ctx) : policy;
    if (needed === "never") return undefined;
    if (await options.store.isToolAllowed(options.ctx.threadId, options.ctx.requester.id, toolCall.name)) {
      return undefined;
    }
    const waiting = await options.store.inboxLength(options.ctx.threadId);
    const asked = Date.now();
    const verdict = await options.gate.request(
      {
        callKey: callKey(options.transcript.lastIndexOf(assistantMessage), toolCall.id),
        toolCallId: toolCall.id,
        toolName: toolCall.name,
        argumentsText: renderArguments(toolCall.arguments, CARD_ARGUMENTS_CHARS),
        requester: options.ctx.requester,
        signal,
      },
      waiting,
    );
    options.observer?.approval?.(verdict.kind, Date.now() - asked);
    const reason = verdictReason(verdict);
    return reason === undefined ? undefined : { block: true, reason };
  };
}
