import type { RunsConfig } from "./config.js";
import { parsePendingStartMember, pendingStartsKey, threadKeys } from "./keys.js";
import { addRunJob, type RunQueue } from "./queue.js";
import type { RedisClient } from "./redis-client.js";
import type { RunLogger } from "./setup.js";

/** What one sweep did. */
export interface SweepResult {
  /** Runs that had their lease but no job, now enqueued. */
  enqueued: string[];
  /** Entries looked at and cleared. */
  cleared: number;
}

/**
 * Finds decided starts that never got their job — the gateway stored the start (lease, prompt) and died or
 * lost Redis before adding the BullMQ job — and adds it. The gateway marks every submit in a sorted set
 * before the script runs and clears the mark once the job is added; a mark older than `graceMs` whose
 * message is still the queued prompt of its thread's active run means the job may be missing. Adding it is
 * safe whatever happened: the job id is the run id, so BullMQ keeps one job per run. Bounded: at most
 * `batch` entries per sweep. @throws on Redis errors.
 */
export async function sweepPendingStarts(
  redis: RedisClient,
  queue: RunQueue,
  config: Pick<RunsConfig, "prefix" | "startSweepGraceMs">,
  batch = 200,
): Promise<SweepResult> {
  const key = pendingStartsKey(config.prefix);
  const members = await redis.zrangebyscore(
    key,
    "-inf",
    Date.now() - config.startSweepGraceMs,
    "LIMIT",
    0,
    batch,
  );
  const result: SweepResult = { enqueued: [], cleared: 0 };
  for (const member of members) {
    const entry = parsePendingStartMember(member);
    if (entry) {
      const keys = threadKeys(config.prefix, entry.threadId);
      const replies =
        (await redis
          .multi()
          .hget(keys.meta, "run")
          .hget(keys.state, entry.messageId)
          .hget(keys.disposition, entry.messageId)
          .exists(keys.lease)
          .exec()) ?? [];
      const [run, state, disposition, leased] = replies.map(([err, value]) => {
        if (err) throw err;
        return value;
      });
      const waitingPrompt = state === "queued" && disposition === "prompt" && leased === 1;
      if (waitingPrompt && typeof run === "string" && run !== "" && !(await queue.getJob(run))) {
        await addRunJob(queue, entry.threadId, run);
        result.enqueued.push(run);
      }
    }
    await redis.zrem(key, member);
    result.cleared++;
  }
  return result;
}

/** Runs {@link sweepPendingStarts} every `intervalMs` until the returned function is called. */
export function startPendingStartSweeper(
  redis: RedisClient,
  queue: RunQueue,
  config: Pick<RunsConfig, "prefix" | "startSweepGraceMs" | "startSweepIntervalMs">,
  log: RunLogger,
): () => void {
  if (config.startSweepIntervalMs <= 0) return () => {};
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    sweepPendingStarts(redis, queue, config)
      .then((swept) => {
        for (const runId of swept.enqueued) log.warn({ runId }, "added the missing job of a started run");
      })
      .catch((err: unknown) => log.warn({ err }, "start sweep failed"))
      .finally(() => {
        running = false;
      });
  }, config.startSweepIntervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
