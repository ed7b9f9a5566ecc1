/**
 * Runs on Redis and BullMQ: intake (gateway side), the run processor (worker side), approvals, abort,
 * and the thread store. Every per-thread decision is one atomic script on the thread's hash-tagged keys
 * (docs/architecture.md). Internal to the app (not a package export): this surface is what `src/app`
 * composes; the scripts, the processor and the ledgers stay inside the folder.
 */
export {
  DEFAULT_STOP_WORDS,
  type Disposition,
  type RunBudgets,
  type RunsConfig,
  runsConfig,
} from "./config.js";
export { createGateway, type GatewayOptions, NOT_STORED_NOTICE } from "./gateway.js";
export {
  type DecideResult,
  Intake,
  isStopCommand,
  STOP_IDLE_TEXT,
  STOP_REFUSED_TEXT,
  type StopResult,
  type SubmitResult,
} from "./intake.js";
export type { IntakeRetryPolicy } from "./intake-retry.js";
export {
  discordRestBudgetPrefix,
  eventsChannel,
  playgroundKeys,
  queuePrefix,
  type SlackKeys,
  slackKeys,
  type ThreadKeys,
  threadKeys,
} from "./keys.js";
export { DEFAULT_LOOP_GUARD, type LoopGuardLimits } from "./loop-guard.js";
export { BUILTIN_PRICES, type ModelPrice, type PriceTable } from "./pricing.js";
export { createRunQueue, type RunQueue } from "./queue.js";
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
export type { SpendCap, SpendCaps } from "./spend.js";
export { type ThreadMeta, ThreadStore } from "./thread-store.js";
export { traceLogFields } from "./tracing.js";
export type { ChatUserMessage } from "./user-message.js";
export { type RunWorkerHandle, type RunWorkerOptions, startRunWorker } from "./worker.js";
