/**
 * Threadline's agent core: a tool-calling loop with the semantics of the pi agent core, and where it
 * deliberately differs (docs/agent-loop.md). Depends only on zod; usable alone as a library
 * (`threadline/agent`). The tool-call steps, signal plumbing and the incremental converter stay inside.
 */
export {
  Agent,
  type AgentInitialState,
  type AgentListener,
  type AgentOptions,
  AgentState,
  type QueueMode,
  UNKNOWN_MODEL,
} from "./agent.js";
export { defaultConvertToLlm } from "./convert.js";
export { createAssistantMessageEventStream, EventStream } from "./event-stream.js";
export { InterruptLatch } from "./interrupts.js";
export {
  ABORTED_REQUEST_TEXT,
  agentLoop,
  agentLoopContinue,
  emptyAssistantMessage,
  emptyUsage,
  failureMessage,
  runAgentLoop,
  runAgentLoopContinue,
} from "./loop.js";
export {
  ABORTED_TOOL_TEXT,
  BLOCKED_TOOL_TEXT,
  runToolBatch,
  type ToolBatchInput,
  type ToolBatchResult,
} from "./tool-calls.js";
export type * from "./types.js";
export { validateToolArguments } from "./validation.js";
