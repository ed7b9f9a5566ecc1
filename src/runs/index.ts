/**
 * Runs on Redis and BullMQ: intake (gateway side), the run processor (worker side), approvals, abort,
 * and the thread store. Every per-thread decision is one atomic script on the thread's hash-tagged keys.
 */
export { ActiveRuns } from "./active-runs.js";
export { type ApprovalVerdict, verdictReason } from "./approvals.js";
export { type BusEvent, EventBus } from "./bus.js";
export {
  DEFAULT_RUNS_CONFIG,
  DEFAULT_STOP_WORDS,
  type Disposition,
  type RunBudgets,
  type RunsConfig,
  runsConfig,
} from "./config.js";
export { approvalWaitingNotice, createGateway, type GatewayOptions, NOT_STORED_NOTICE } from "./gateway.js";
export {
  type DecideResult,
  Intake,
  isStopCommand,
  STOP_IDLE_TEXT,
  STOP_REFUSED_TEXT,
  type StopResult,
  type SubmitResult,
} from "./intake.js";
export { DEFAULT_INTAKE_RETRY, type IntakeRetryPolicy } from "./intake-retry.js";
export { eventsChannel, queuePrefix, RUN_QUEUE, type ThreadKeys, threadKeys } from "./keys.js";
export {
  chainBeforeToolCall,
  createLoopGuard,
  DEFAULT_LOOP_GUARD,
  type LoopGuardLimits,
} from "./loop-guard.js";
export {
  BUILTIN_PRICES,
  type ModelPrice,
  type PriceTable,
  priceFor,
  priceTable,
  usageCost,
} from "./pricing.js";
export { createRunProcessor, RunInterruptedError, type RunJob, type RunProcessorDeps } from "./processor.js";
export { addRunJob, createRunQueue, createRunWorker, type RunJobData, type RunQueue } from "./queue.js";
export { INTERRUPTED_TOOL_TEXT } from "./recovery.js";
export type { RedisClient } from "./redis-client.js";
export {
  type AgentSetup,
  type ContextTransformRun,
  type OutboundResolver,
  type RunLogger,
  type RunObserver,
  type RunTool,
  SILENT_LOGGER,
  type ToolRunContext,
} from "./setup.js";
export { type SpendCap, type SpendCaps, SpendLedger, type SpendTotals } from "./spend.js";
export { type ThreadMeta, ThreadStore } from "./thread-store.js";
export { type ChatUserMessage, toUserMessage } from "./user-message.js";
export { type RunWorkerHandle, type RunWorkerOptions, startRunWorker } from "./worker.js";
