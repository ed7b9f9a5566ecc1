import { type DefaultJobOptions, type Processor, Queue, Worker, type WorkerOptions } from "bullmq";
import { traceEnqueue } from "./gateway-tracing.js";
import { queuePrefix, RUN_QUEUE } from "./keys.js";
import type { RedisClient } from "./redis-client.js";
import type { TraceCarrier } from "./tracing-core.js";

/** The BullMQ queue of runs. */
export type RunQueue = Queue<RunJobData, void, string>;

/** A run job: which thread, and which run (the job id). */
export interface RunJobData {
  threadId: string;
  runId: string;
  /** The gateway's trace context (W3C `traceparent`), when tracing is on: the worker's run span joins it. */
  trace?: TraceCarrier;
}

/** Job options: transient failures (Redis hiccup, chat API outage) are retried with backoff. */
const JOB_DEFAULTS: DefaultJobOptions = {
  attempts: 5,
  backoff: { type: "exponential", delay: 1000 },
  removeOnComplete: { count: 1000 },
  removeOnFail: { age: 7 * 24 * 3600 },
};

/** The queue the gateway adds runs to. `connection` must allow blocking commands (BullMQ's own requirement). */
export function createRunQueue(connection: RedisClient, prefix: string): RunQueue {
  return new Queue<RunJobData, void, string>(RUN_QUEUE, {
    connection,
    prefix: queuePrefix(prefix),
    defaultJobOptions: JOB_DEFAULTS,
  });
}

/**
 * Adds the job of a decided run. The job id is the run id, so adding it again (a retried submit, the start
 * sweeper) never creates a second job while the first exists. With tracing on, the job carries the context
 * of a `run.enqueue` span, so the worker's spans join the gateway's trace. @throws on Redis errors.
 */
export async function addRunJob(queue: RunQueue, threadId: string, runId: string): Promise<void> {
  await traceEnqueue({ threadId, runId }, async (trace) => {
    await queue.add("run", trace ? { threadId, runId, trace } : { threadId, runId }, { jobId: runId });
  });
}

/** Processes run jobs. A stalled job (its worker died) is picked up again and resumes from the transcript. */
export function createRunWorker(
  connection: RedisClient,
  prefix: string,
  processor: Processor<RunJobData, void, string>,
  options: Partial<
    Pick<WorkerOptions, "concurrency" | "lockDuration" | "stalledInterval" | "maxStalledCount" | "autorun">
  > = {},
): Worker<RunJobData, void, string> {
  return new Worker<RunJobData, void, string>(RUN_QUEUE, processor, {
    connection,
    prefix: queuePrefix(prefix),
    concurrency: options.concurrency ?? 200,
    lockDuration: options.lockDuration ?? 30_000,
    stalledInterval: options.stalledInterval ?? 15_000,
    maxStalledCount: options.maxStalledCount ?? 5,
    autorun: options.autorun ?? true,
  });
}
