import type { ChatUser, RunOutcome, RunRenderer, RunStats } from "../chat/index.js";
import type { RunsConfig } from "./config.js";
import type { Lease } from "./lease.js";
import type { RunJobData } from "./queue.js";
import type { QueueMarks } from "./queue-marks.js";
import type { RunLogger, RunObserver } from "./setup.js";
import type { ThreadScripts } from "./thread-scripts.js";
import type { ThreadStore } from "./thread-store.js";
import type { RunTracer } from "./tracing.js";

/** How one execution of a run job ended: the single outcome the end step acts on. */
export type SessionOutcome =
  /** The loop ended and the thread was released (nothing queued). */
  | { kind: "completed" }
  | { kind: "stopped"; by: ChatUser | undefined }
  | { kind: "budget"; reason: string }
  /** Another claim owns the thread (lease lost or taken over): write nothing more, show nothing more. */
  | { kind: "lost" }
  /** The worker shuts down: leave the run to be resumed elsewhere. */
  | { kind: "interrupted" }
  /** Something threw; `final` when no retry of the job follows. */
  | { kind: "failed"; error: unknown; final: boolean };

/** Thrown when a worker shuts down mid-run: BullMQ retries the job and the run resumes elsewhere. */
export class RunInterruptedError extends Error {
  constructor() {
    super("Run interrupted by worker shutdown; it will resume from the transcript.");
    this.name = "RunInterruptedError";
  }
}

/** Thrown when a run's lease lapsed with nobody else taking it: BullMQ retries the job, which claims again. */
export class RunLeaseLapsedError extends Error {
  constructor() {
    super("The run's lease lapsed and no other worker took it; the job is retried to resume it.");
    this.name = "RunLeaseLapsedError";
  }
}

const FAILED_TEXT = "Something went wrong while running this request; it has been logged.";
const RESUMING_TEXT = "Interrupted for a moment; this request resumes on its own.";

/** What the end step acts with: the session's claim, its reply and what it counted. */
export interface RunEnd {
  config: RunsConfig;
  scripts: ThreadScripts;
  store: ThreadStore;
  job: RunJobData;
  /** The claim's lease; `undefined` when nothing was claimed (the start script itself failed). */
  lease: Lease | undefined;
  marks: QueueMarks;
  log: RunLogger;
  fields: Record<string, unknown>;
  observer: RunObserver;
  tracer: RunTracer;
  renderer: RunRenderer | undefined;
  stats: RunStats;
  startedAt: number;
}

/**
 * The end step: acts on the single outcome — releases the thread when the run is over (queued messages
 * enter the transcript marked not processed), stops the heartbeat, logs the one "run finished" line, and
 * shows the outcome in the chat, waiting for that at most `finishTimeoutMs` (and not at all when the
 * worker shuts down). Throws for outcomes that BullMQ must retry.
 */
export async function endRun(
  run: RunEnd,
  outcome: SessionOutcome,
  workerSignal: AbortSignal | undefined,
): Promise<void> {
  const { config, lease } = run;
  if (!lease) {
    // Nothing was claimed: the start script itself failed.
    if (outcome.kind === "failed") throw outcome.error;
    return;
  }
  let shown: RunOutcome;
  switch (outcome.kind) {
    case "completed":
      shown = { kind: "completed" };
      break;
    case "stopped":
    case "budget": {
      const release = await run.scripts.release(run.job.threadId, {
        token: lease.token,
        mode: "stopped",
        now: Date.now(),
        retention: config.retentionMs,
      });
      if (release.kind === "lost") lease.lose();
      else if (release.kind === "released") run.marks.notProcessed(release.notProcessed);
      shown =
        outcome.kind === "budget"
          ? { kind: "budget", reason: outcome.reason }
          : { kind: "stopped", by: outcome.by };
      break;
    }
    case "lost":
    case "interrupted":
      shown = {
        kind: "stopped",
        by: undefined,
        reason: "The worker running this request stopped; it will resume.",
      };
      break;
    case "failed":
      run.log.error({ ...run.fields, err: outcome.error, final: outcome.final }, "run failed");
      // A failure that a retry of the job may still recover from says so, not "something went wrong".
      shown = outcome.final
        ? { kind: "failed", message: FAILED_TEXT }
        : { kind: "stopped", by: undefined, reason: RESUMING_TEXT };
      break;
  }
  lease.stop();
  run.observer.runEnded?.(outcome.kind);
  run.tracer.finished(outcome.kind, run.stats);
  run.log.info(
    { ...run.fields, outcome: outcome.kind, ...run.stats, durationMs: Date.now() - run.startedAt },
    "run finished",
  );
  await finishRenderer(run, shown, workerSignal);
  if (outcome.kind === "failed") throw outcome.error;
  if (outcome.kind === "interrupted") throw new RunInterruptedError();
  if (outcome.kind === "lost" && (await orphaned(run))) throw new RunLeaseLapsedError();
}

/**
 * True when this claim lost its lease by letting it lapse (an event-loop stall, a Redis outage) and no
 * other claim took the run over: returning would leave the thread with queued messages and no job, so
 * the job is retried and its next attempt claims the run again.
 */
async function orphaned(run: RunEnd): Promise<boolean> {
  try {
    return await run.store.isOrphaned(run.job.threadId, run.job.runId);
  } catch {
    return true; // Redis is not answering: let the retry find out
  }
}

async function finishRenderer(
  run: RunEnd,
  outcome: RunOutcome,
  workerSignal: AbortSignal | undefined,
): Promise<void> {
  const finishing = (async () => {
    try {
      await run.renderer?.finish(outcome, run.stats);
    } catch (err) {
      run.log.warn({ ...run.fields, err }, "final chat update failed");
    }
  })();
  if (workerSignal?.aborted) return;
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const late = await Promise.race([
    finishing.then(() => false),
    new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(true), run.config.finishTimeoutMs);
      onAbort = () => resolve(true);
      workerSignal?.addEventListener("abort", onAbort, { once: true });
    }),
  ]);
  clearTimeout(timer);
  if (onAbort) workerSignal?.removeEventListener("abort", onAbort);
  if (late) run.log.warn(run.fields, "final chat update still pending; the job returns without it");
}
