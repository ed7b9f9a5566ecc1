import type { ActiveRuns } from "./active-runs.js";
import type { EventBus } from "./bus.js";
import type { RunsConfig } from "./config.js";
import { priceTable } from "./pricing.js";
import type { RunJobData } from "./queue.js";
import type { RedisClient } from "./redis-client.js";
import { type RunAttempts, RunSession } from "./run-session.js";
import { RunTracer } from "./run-tracer.js";
import type { AgentSetup, OutboundResolver, RunLogger, RunObserver } from "./setup.js";
import { ThreadScripts } from "./thread-scripts.js";

export { RunInterruptedError } from "./run-session.js";

/** What the run processor needs. */
export interface RunProcessorDeps {
  /** A connection for ordinary (non-blocking) commands. */
  redis: RedisClient;
  /** Started event bus of this process. */
  bus: EventBus;
  config: RunsConfig;
  outbound: OutboundResolver;
  agent: AgentSetup;
  log?: RunLogger;
  observer?: RunObserver;
  /** Where the processor records the runs it is executing (claimed, not yet returned). */
  active?: ActiveRuns;
}

/** The job as the processor reads it (a BullMQ job satisfies this). */
export interface RunJob extends RunAttempts {
  data: RunJobData;
}

/**
 * Creates the BullMQ processor of run jobs: claims the thread with a fencing token of its own, loads the
 * transcript, runs the agent with Redis-backed queues, persists every message, and releases the thread
 * atomically with checking its inbox. A plain function of (job, token, signal) that tests call directly.
 * Throws for what BullMQ should retry (a failure, a worker shutdown); a stale job returns quietly.
 */
export function createRunProcessor(
  deps: RunProcessorDeps,
): (job: RunJob, token?: string, signal?: AbortSignal) => Promise<void> {
  const scripts = new ThreadScripts(deps.redis, deps.config.prefix);
  return async (job, _token, signal) => {
    const attempts: RunAttempts = {};
    if (job.attemptsMade !== undefined) attempts.attemptsMade = job.attemptsMade;
    if (job.opts !== undefined) attempts.opts = job.opts;
    // The run span joins the trace the gateway put in the job; it is active for the whole execution.
    const tracer = new RunTracer(job.data, priceTable(deps.config.prices));
    await tracer.run(() => new RunSession(deps, scripts, job.data, attempts, tracer).execute(signal));
  };
}
