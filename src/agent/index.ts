/**
 * Threadline's agent core: a tool-calling loop with the semantics of the pi agent core
 * (see `shared/spec/agent-loop.md`). Depends only on zod; usable alone as a library.
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
export { defaultConvertToLlm, IncrementalConverter } from "./convert.js";
export { createAssistantMessageEventStream, EventStream, type EventStreamOptions } from "./event-stream.js";
export { InterruptLatch, interruptedToolText, linkSignals, noticeOf } from "./interrupts.js";
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
  abortToolCalls,
  BLOCKED_TOOL_TEXT,
  executePreparedToolCall,
  type FinalizedToolCall,
  finalizeExecutedToolCall,
  type PreparedToolCall,
  prepareToolCall,
  runToolBatch,
  type ToolBatchInput,
  type ToolBatchResult,
} from "./tool-calls.js";
export type * from "./types.js";
export { formatValidationError, validateToolArguments } from "./validation.js";
