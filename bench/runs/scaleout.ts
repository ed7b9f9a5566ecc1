/**
 * The parent side of the scale-out scenario (issue #17: "2 worker processes × 150 runs perform like
 * 1 × 150 each").
 *
 * How the runs are assigned and measured: the phase with P processes starts P streaming workers on the same
 * Redis, prefix and BullMQ queue, each with concurrency exactly N (the per-process N). Each warms up on a
 * queue of its own, says `ready`, and once all have, the parent says `go` to every one at the same moment;
 * each takes its baselines, starts its monitors and says `ready` again. Then the parent submits P × N runs
 * at once through one Intake. BullMQ hands them to whichever worker fetches first, but a worker never
 * holds more than its concurrency and no run ends before all are taken (a run lasts 10 model turns), so
 * each worker takes exactly N. Each child measures the runs its own worker took (by their completions on
 * that worker) and reports them; a child whose worker got fewer would time out and fail the phase. The
 * phase with one process (1 × N) runs first, the same way, in the same invocation.
 *
 * The model alone is measured the same way: one bare client at N, then P bare clients at N each, started
 * together. Beside each phase the parent samples the CPU the model server (its own process), Redis
 * (`INFO cpu`), the gateway (this process) and the whole machine (`/proc/stat`: other helpers' load too)
 * used.
 */
import { readFileSync } from "node:fs";
import type { Redis } from "ioredis";
import type { Intake } from "../../src/runs/index.js";
import type { Child } from "../support/child.js";
import { type BareResult, type ChildArgs, GO, type StreamResult } from "./protocol.js";
import { chatMessage, now, STREAM_WARMUP_RUNS, scaleoutRunId } from "./settings.js";

/** CPU seconds used during one phase, and its wall time. */
export interface PhaseUsage {
  wallS: number;
  serverS: number;
  redisS: number;
  gatewayS: number;
  /** Busy CPU seconds of every process on the machine (NaN where `/proc/stat` is unreadable). */
  machineS: number;
}

export interface ScaleoutPhase {
  processes: number;
  runs: StreamResult[];
  usage: PhaseUsage;
}

export interface ScaleoutResult {
  /** Runs per process. */
  n: number;
  /** The model alone: one bare client at N, and P bare clients at N each, together. */
  bareOne: BareResult;
  bareMany: BareResult[];
  phases: ScaleoutPhase[];
}

export interface ScaleoutContext {
  start: (kind: string, args: Partial<ChildArgs>) => Child;
  intake: Intake;
  redis: Redis;
  prefix: string;
  baseURL: string;
  serverPid: number | undefined;
  editIntervalMs: number;
  progress: (text: string) => void;
}

export async function runScaleout(
  ctx: ScaleoutContext,
  processes: number,
  n: number,
): Promise<ScaleoutResult> {
  ctx.progress(`scale-out: model alone, 1 × ${n}`);
  const [bareOne] = await together(ctx, "bare", 1, { baseURL: ctx.baseURL, n });
  ctx.progress(`scale-out: model alone, ${processes} × ${n}`);
  const bareMany = await together(ctx, "bare", processes, { baseURL: ctx.baseURL, n });
  const phases: ScaleoutPhase[] = [];
  for (const count of [1, processes]) {
    ctx.progress(
      `scale-out: ${count} Threadline worker ${count === 1 ? "process" : "processes"} × ${n} runs`,
    );
    const args = {
      prefix: ctx.prefix,
      baseURL: ctx.baseURL,
      n,
      warm: STREAM_WARMUP_RUNS,
      editIntervalMs: ctx.editIntervalMs,
    };
    let before: Snapshot | undefined;
    const runs = await together(ctx, "stream", count, args, async () => {
      before = await snapshot(ctx);
      const submitted = await Promise.all(
        Array.from({ length: count * n }, (_, i) =>
          ctx.intake.submit(chatMessage(scaleoutRunId(count, i), "go")),
        ),
      );
      const notStarted = submitted.filter((result) => result.kind !== "started").length;
      if (notStarted > 0) throw new Error(`${notStarted} scale-out runs did not start`);
    });
    const after = await snapshot(ctx);
    phases.push({ processes: count, runs: runs as StreamResult[], usage: usage(before!, after) });
  }
  return { n, bareOne: bareOne as BareResult, bareMany: bareMany as BareResult[], phases };
}

/**
 * Starts `count` children of `kind` (process 0 … count − 1), waits until all are warmed up, says `go` to
 * all, waits until all are measuring, runs `load` (if any), and returns their results in process order.
 */
async function together(
  ctx: ScaleoutContext,
  kind: string,
  count: number,
  args: Partial<ChildArgs>,
  load?: () => Promise<void>,
): Promise<unknown[]> {
  const children = Array.from({ length: count }, (_, index) =>
    ctx.start(kind, { ...args, process: { index, of: count } }),
  );
  await Promise.all(children.map((child) => child.next("ready", 90_000)));
  for (const child of children) child.process.send({ type: GO });
  // The bare client measures right after `go`; a streaming worker says `ready` again first.
  if (kind === "stream") await Promise.all(children.map((child) => child.next("ready", 30_000)));
  await load?.();
  const results = await Promise.all(children.map((child) => child.result<unknown>(100_000)));
  await Promise.all(children.map((child) => child.stop()));
  return results;
}

interface Snapshot {
  at: number;
  server: number;
  redis: number;
  gateway: number;
  machine: number;
}

async function snapshot(ctx: ScaleoutContext): Promise<Snapshot> {
  const cpu = await ctx.redis.info("cpu");
  const field = (name: string) => Number(new RegExp(`${name}:(\\S+)`).exec(cpu)?.[1] ?? Number.NaN);
  const gateway = process.cpuUsage();
  return {
    at: now(),
    server: ctx.serverPid === undefined ? Number.NaN : processCpuS(ctx.serverPid),
    redis: field("used_cpu_user") + field("used_cpu_sys"),
    gateway: (gateway.user + gateway.system) / 1e6,
    machine: machineBusyS(),
  };
}

function usage(before: Snapshot, after: Snapshot): PhaseUsage {
  return {
    wallS: (after.at - before.at) / 1000,
    serverS: after.server - before.server,
    redisS: after.redis - before.redis,
    gatewayS: after.gateway - before.gateway,
    machineS: after.machine - before.machine,
  };
}

/** Linux's USER_HZ, the unit of `/proc` CPU times (100 on every mainstream kernel build). */
const TICKS_PER_S = 100;

/** User + system CPU seconds of process `pid` (`/proc/<pid>/stat`); NaN where that is unreadable. */
function processCpuS(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command name (which may contain spaces): state is the first, utime the 12th.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_S;
  } catch {
    return Number.NaN;
  }
}

/** Busy CPU seconds of the whole machine since boot (`/proc/stat`, all but idle and iowait). */
function machineBusyS(): number {
  try {
    const line = readFileSync("/proc/stat", "utf8").split("\n")[0] ?? "";
    const [, user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).map(Number);
    return (
      ((user ?? 0) + (nice ?? 0) + (system ?? 0) + (irq ?? 0) + (softirq ?? 0) + (steal ?? 0)) / TICKS_PER_S
    );
  } catch {
    return Number.NaN;
  }
}
