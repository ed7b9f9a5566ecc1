import {
  type AgentLoopConfig,
  type AgentMessage,
  type AssistantMessage,
  type ToolCall,
  validateToolArguments,
} from "../agent/index.js";
import { renderArguments } from "../chat/index.js";
import { approvalSchemaOf } from "./approval-edit.js";
import {
  APPROVAL_WITHDRAWN,
  type ApprovalGate,
  type ApprovalRequest,
  type ApprovalVerdict,
  verdictReason,
} from "./approvals.js";
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
  /** A message's transcript position when `transcript` starts later than the thread's (default: its index). */
  positionOf?: (message: AgentMessage) => number;
  store: ThreadStore;
  observer?: RunObserver;
}

const schemas = new WeakMap<object, { schema?: string }>();

/** The tool's parameters as JSON Schema text for the gateway's edit check (cached per schema). */
function schemaOf(tool: RunTool | undefined): { schema?: string } {
  if (!tool) return {};
  let cached = schemas.get(tool.parameters);
  if (!cached) {
    const schema = approvalSchemaOf(tool.parameters);
    cached = schema === undefined ? {} : { schema };
    schemas.set(tool.parameters, cached);
  }
  return cached;
}

function timeoutOf(tool: RunTool | undefined): { timeoutMs?: number | "none" } {
  return tool?.approvalTimeoutMs === undefined ? {} : { timeoutMs: tool.approvalTimeoutMs };
}

/** The approval hook, and how to withdraw the cards it opened ahead once the run is over. */
export type ToolApprovalHook = NonNullable<AgentLoopConfig["beforeToolCall"]> & {
  /**
   * Withdraws (as cancelled) every card opened ahead that the loop never asked for — call it when the run
   * ends for good (not when it is left to be resumed: the resumed run finds those cards). Idempotent.
   */
  withdrawUnclaimed(): void;
  /**
   * The `afterToolCall` that tells the model a call ran with an approver's edited arguments: the result
   * starts with a text block naming the editor and the arguments that ran (the assistant message keeps the
   * model's original call, so the transcript holds both versions). Leaves other calls alone; never throws.
   */
  afterToolCall: NonNullable<AgentLoopConfig["afterToolCall"]>;
};

/** The first text of a result whose call ran with edited arguments (what the model reads). */
export function editedArgumentsNote(by: string, args: Record<string, unknown>): string {
  return `Note: ${by} edited the arguments before approving; the call ran with these arguments instead of yours:\n${JSON.stringify(args)}`;
}

/** A card shown ahead of its call's turn in the batch: its verdict, and how to withdraw it if never asked. */
interface Opened {
  verdict: Promise<ApprovalVerdict>;
  cancel: AbortController;
  asked: number;
}

/**
 * A `beforeToolCall` that applies each tool's approval policy: "never" runs, "ask" waits for a decision
 * (unless the thread always allows the tool for this run's requester, or for everyone); a denial, timeout
 * or abort blocks the call with a reason the model can read. The loop prepares a batch's calls one after
 * the other, so when the first call that needs a card is prepared, the cards of the batch's later calls
 * with a plain "ask" policy (and valid arguments) go up too: every card of a batch is shown at once and
 * decided on its own. A card whose call the loop then never prepares (an abort, a loop-guard block) is
 * withdrawn as cancelled when the loop moves past it.
 */
export function createToolApproval(options: ToolApprovalOptions): ToolApprovalHook {
  const byName = new Map(options.tools.map((tool) => [tool.name, tool]));
  /** Cards opened ahead, by call key, in batch order. */
  const ahead = new Map<string, Opened>();

  const requestOf = (
    index: number,
    toolCall: ToolCall,
    signal: AbortSignal | undefined,
  ): ApprovalRequest => ({
    callKey: callKey(index, toolCall.id),
    toolCallId: toolCall.id,
    toolName: toolCall.name,
    argumentsText: renderArguments(toolCall.arguments, CARD_ARGUMENTS_CHARS),
    arguments: toolCall.arguments,
    ...schemaOf(byName.get(toolCall.name)),
    requester: options.ctx.requester,
    signal,
    ...timeoutOf(byName.get(toolCall.name)),
  });

  /** A later call of the batch gets its card now if it surely needs one. */
  const needsCardAhead = async (toolCall: ToolCall): Promise<boolean> => {
    const tool = byName.get(toolCall.name);
    // Policy functions are asked with the call's own validated arguments, at its turn.
    if (tool?.approval !== "ask") return false;
    try {
      validateToolArguments(tool, toolCall);
    } catch {
      return false; // the loop refuses it before asking
    }
    return !(await options.store.isToolAllowed(
      options.ctx.threadId,
      options.ctx.requester.id,
      toolCall.name,
    ));
  };

  /** Withdraws cards opened ahead that the loop will not ask for (all but `keep` and later calls). */
  const withdrawSkipped = (keepFrom: Set<string>) => {
    for (const [key, opened] of ahead) {
      if (keepFrom.has(key)) continue;
      ahead.delete(key);
      opened.cancel.abort(APPROVAL_WITHDRAWN);
    }
  };

  const openAhead = async (
    assistantMessage: AssistantMessage,
    index: number,
    from: number,
    signal: AbortSignal | undefined,
    waiting: number,
  ) => {
    const calls = assistantMessage.content.filter((block): block is ToolCall => block.type === "toolCall");
    for (const sibling of calls.slice(from + 1)) {
      const key = callKey(index, sibling.id);
      if (ahead.has(key) || !(await needsCardAhead(sibling))) continue;
      const cancel = new AbortController();
      const combined = signal ? AbortSignal.any([signal, cancel.signal]) : cancel.signal;
      const asked = Date.now();
      const opened = await options.gate.open(requestOf(index, sibling, combined), waiting);
      const verdict: Promise<ApprovalVerdict> =
        opened.kind === "lost" ? Promise.resolve(opened) : options.gate.verdict(opened);
      verdict.catch(() => {}); // awaited (and reported) when the loop asks for this call
      ahead.set(key, { verdict, cancel, asked });
    }
  };

  const hook: NonNullable<AgentLoopConfig["beforeToolCall"]> = async (
    { assistantMessage, toolCall, args },
    signal,
  ) => {
    const index = options.positionOf?.(assistantMessage) ?? options.transcript.lastIndexOf(assistantMessage);
    const calls = assistantMessage.content.filter((block): block is ToolCall => block.type === "toolCall");
    const position = calls.findIndex((call) => call.id === toolCall.id);
    // Calls before this one in the batch were skipped if their cards are still unclaimed.
    withdrawSkipped(new Set(calls.slice(Math.max(position, 0)).map((call) => callKey(index, call.id))));

    const key = callKey(index, toolCall.id);
    let opened = ahead.get(key);
    ahead.delete(key);
    if (!opened) {
      const tool = byName.get(toolCall.name);
      const policy = tool?.approval ?? "never";
      const needed = typeof policy === "function" ? await policy(args) : policy;
      if (needed === "never") return undefined;
      if (await options.store.isToolAllowed(options.ctx.threadId, options.ctx.requester.id, toolCall.name)) {
        return undefined;
      }
      const waiting = await options.store.inboxLength(options.ctx.threadId);
      const asked = Date.now();
      const mine = await options.gate.open(requestOf(index, toolCall, signal), waiting);
      await openAhead(assistantMessage, index, position, signal, waiting);
      opened = {
        verdict: mine.kind === "lost" ? Promise.resolve(mine) : options.gate.verdict(mine),
        cancel: new AbortController(),
        asked,
      };
    }
    const verdict = await opened.verdict;
    options.observer?.approval?.(verdict.kind, Date.now() - opened.asked);
    const reason = verdictReason(verdict);
    if (reason !== undefined) return { block: true, reason };
    if (verdict.kind === "approved" && verdict.edited) return applyEdit(toolCall, args, verdict);
    return undefined;
  };

  /** Who edited which call (by tool call id), for {@link ToolApprovalHook.afterToolCall}. */
  const edits = new Map<string, { by: string; args: Record<string, unknown> }>();

  /**
   * Replaces `args` in place with the approver's edit, checked again with the tool's own zod schema (the
   * gateway checked a JSON Schema copy; refinements only the tool knows are checked here). The loop runs
   * `execute` with the mutated `args` (spec: mutating `args` in `beforeToolCall` changes what `execute`
   * receives). An edit the tool refuses blocks the call with the validation error.
   */
  const applyEdit = (
    toolCall: ToolCall,
    args: Record<string, unknown>,
    verdict: Extract<ApprovalVerdict, { kind: "approved" }>,
  ) => {
    const tool = byName.get(toolCall.name);
    const by = verdict.by?.name ?? "an approver";
    let edited: Record<string, unknown>;
    try {
      edited = tool
        ? validateToolArguments(tool, { ...toolCall, arguments: verdict.edited ?? {} })
        : (verdict.edited ?? {});
    } catch (err) {
      return {
        block: true,
        reason: `${by} edited the arguments, but they are not valid: ${String((err as Error).message)}`,
      };
    }
    for (const key of Object.keys(args)) delete args[key];
    Object.assign(args, edited);
    edits.set(toolCall.id, { by, args: edited });
    return undefined;
  };

  const afterToolCall: NonNullable<AgentLoopConfig["afterToolCall"]> = ({ toolCall, result }) => {
    const edit = edits.get(toolCall.id);
    if (!edit) return undefined;
    edits.delete(toolCall.id);
    return {
      content: [{ type: "text", text: editedArgumentsNote(edit.by, edit.args) }, ...(result.content ?? [])],
    };
  };
  return Object.assign(hook, { withdrawUnclaimed: () => withdrawSkipped(new Set()), afterToolCall });
}
