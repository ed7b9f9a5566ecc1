import type { Worker } from "bullmq";
import { ActiveRuns } from "./active-runs.js";
import { EventBus } from "./bus.js";
import type { RunsConfig } from "./config.js";
import { createRunProcessor } from "./processor.js";
import { createRunQueue, createRunWorker, type RunJobData } from "./queue.js";
import type { RedisClient } from "./redis-client.js";
import type { AgentSetup, OutboundResolver, RunLogger, RunObserver } from "./setup.js";
import { SILENT_LOGGER } from "./setup.js";
import { startPendingStartSweeper } from "./start-sweeper.js";

export interface RunWorkerOptions {
  /** Connection for ordinary commands and scripts. */
  redis: RedisClient;
  /** Separate connection for BullMQ's blocking commands (`maxRetriesPerRequest: null`). */
  bullConnection: RedisClient;
  config: RunsConfig;
  outbound: OutboundResolver;
  agent: AgentSetup;
  /** Runs held at once by this process; default 200 (the CLI passes `WORKER_CONCURRENCY`, default 200). */
  concurrency?: number;
  log?: RunLogger;
  observer?: RunObserver;
  /** BullMQ tuning (tests shorten these to exercise stalled-job recovery). */
  lockDuration?: number;
  stalledInterval?: number;
}

/** A running worker process part: BullMQ worker + event bus. */
export interface RunWorkerHandle {
  worker: Worker<RunJobData, void, string>;
  bus: EventBus;
  /**
   * The thread ids of the runs this worker is executing now (claimed their thread, not finished), one per
   * run. A snapshot: read-only, cheap, no Redis call.
   */
  activeThreadIds(): string[];
  /**
   * Stops taking jobs and lets running runs finish for up to `graceMs` (default 30 s); runs still going
   * then are aborted and their jobs left to be resumed by another worker from the transcript. `force`
   * closes at once without waiting (tests).
   */
  close(options?: { graceMs?: number; force?: boolean } | boolean): Promise<void>;
}

/** Starts processing runs. Resolves once the event bus is subscribed (so no abort or decision is missed). */
export async function startRunWorker(options: RunWorkerOptions): Promise<RunWorkerHandle> {
  const bus = EventBus.forPrefix(options.redis, options.config.prefix);
  await bus.start();
  const active = new ActiveRuns();
  const processor = createRunProcessor({
    redis: options.redis,
    bus,
    config: options.config,
    outbound: options.outbound,
    agent: options.agent,
    active,
    ...(options.log ? { log: options.log } : {}),
    ...(options.observer ? { observer: options.observer } : {}),
  });
  const tuning: Parameters<typeof createRunWorker>[3] = {};
  if (options.concurrency !== undefined) tuning.concurrency = options.concurrency;
  if (options.lockDuration !== undefined) tuning.lockDuration = options.lockDuration;
  if (options.stalledInterval !== undefined) tuning.stalledInterval = options.stalledInterval;
  const worker = createRunWorker(options.bullConnection, options.config.prefix, processor, tuning);
  // Every worker sweeps for started runs whose job was never added (a gateway died in between). Its queue
  // is BullMQ's, so it goes on BullMQ's connection (not auto-pipelined), not on the command connection.
  const sweepQueue = createRunQueue(options.bullConnection, options.config.prefix);
  const stopSweeping = startPendingStartSweeper(
    options.redis,
    sweepQueue,
    options.config,
    options.log ?? SILENT_LOGGER,
  );
  return {
    worker,
    bus,
    activeThreadIds: () => active.threadIds(),
    async close(options = {}) {
      const { graceMs = 30_000, force = false } = typeof options === "boolean" ? { force: options } : options;
      stopSweeping();
      // BullMQ sends its connections' set-up commands (CLIENT SETNAME, INFO, the version check) without
      // awaiting them; a close while they are in flight rejects them unhandled, which ends a Node process
      // (taskforcesh/bullmq#2402, seen on a Cluster in a worker closed right after it started). Let them
      // finish first, but briefly: at shutdown Redis may be gone.
      await settlesWithin(Promise.all([worker.waitUntilReady(), sweepQueue.waitUntilReady()]), SETUP_WAIT_MS);
      const closing = worker.close(force);
      const timer = setTimeout(() => worker.cancelAllJobs("worker shutting down"), graceMs);
      try {
        await closing;
      } finally {
        clearTimeout(timer);
      }
      await sweepQueue.close();
      await bus.close();
    },
  };
}

/** How long closing waits for BullMQ's connection set-up to finish (see `close`). */
const SETUP_WAIT_MS = 1000;

/** Resolves when `promise` settles (either way) or after `ms`, whichever is first. Never rejects. */
function settlesWithin(promise: Promise<unknown>, ms: number): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    timer.unref();
    promise.then(
      () => {
        clearTimeout(timer);
        resolve();
      },
      () => {
        clearTimeout(timer);
        resolve();
      },
    );
  });
}
