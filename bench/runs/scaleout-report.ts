/** The scale-out section of the report: per-process figures, the P × N ÷ 1 × N ratios, the cores. */
import { availableParallelism } from "node:os";
import { verdict } from "../support/stats.js";
import type { BareResult, StreamResult } from "./protocol.js";
import { kib, ms, ratio, STREAM_CPU_RATIO, STREAM_ELD_P99_MS, streamTarget } from "./report.js";
import type { PhaseUsage, ScaleoutPhase, ScaleoutResult } from "./scaleout.js";
import { quantile } from "./settings.js";

/**
 * "Performs like 1 × N": every process of the P × N phase meets the streaming targets at N against the
 * model alone at N (added per turn, event-loop delay p99, CPU per turn ≤ 1.5× the bare client's) and
 * reaches at least this share of the single process's throughput (the bench's reading of "like").
 */
export const SCALEOUT_THROUGHPUT_SHARE = 0.9;

interface ProcessFigures {
  complete: boolean;
  turn50: number;
  turn99: number;
  added50: number;
  added99: number;
  addedMany50: number;
  addedMany99: number;
  cpuPerTurnMs: number;
  cpuRatio: number;
  eldP99: number;
  turnsPerS: number;
  cores: number;
}

function figures(run: StreamResult, n: number, bareOne: BareResult, bareMany: number[]): ProcessFigures {
  const turn50 = quantile(run.intervals, 0.5);
  const turn99 = quantile(run.intervals, 0.99);
  const cpuPerTurnMs = run.cpuMicros / 1000 / Math.max(1, run.turns);
  return {
    complete: run.runsOk === n,
    turn50,
    turn99,
    added50: turn50 - quantile(bareOne.intervals, 0.5),
    added99: turn99 - quantile(bareOne.intervals, 0.99),
    addedMany50: turn50 - quantile(bareMany, 0.5),
    addedMany99: turn99 - quantile(bareMany, 0.99),
    cpuPerTurnMs,
    cpuRatio: (cpuPerTurnMs * 1000) / bareOne.cpuMicrosPerTurn,
    eldP99: run.eldP99,
    turnsPerS: run.turns / (run.wallMs / 1000),
    cores: run.cpuMicros / 1000 / run.wallMs,
  };
}

const mean = (values: number[]) => values.reduce((sum, value) => sum + value, 0) / Math.max(1, values.length);
const signed = (value: number) => `${value >= 0 ? "+" : "−"}${ms(Math.abs(value))}`;

/** Prints the section and appends its verdict lines to `verdicts`. */
export function reportScaleout(result: ScaleoutResult, verdicts: string[]): void {
  const { n, bareOne } = result;
  const bareMany = result.bareMany.flatMap((bare) => bare.intervals);
  const single = result.phases.find((phase) => phase.processes === 1);
  const many = result.phases.find((phase) => phase.processes > 1);
  const p = many?.processes ?? 1;
  const target = streamTarget(n);
  console.log(
    `### Scale-out: ${p} worker processes × ${n} runs on one queue vs 1 × ${n} (same run; model alone: 1 × ${n} p50 / p99 ${ms(quantile(bareOne.intervals, 0.5))} / ${ms(quantile(bareOne.intervals, 0.99))}, ${p} × ${n} together ${ms(quantile(bareMany, 0.5))} / ${ms(quantile(bareMany, 0.99))})\n`,
  );
  console.log(
    `| phase / process | runs ok | turn p50 / p99 | **added** vs model alone 1 × ${n} p50 / p99 | added vs model alone ${p} × ${n} p50 / p99 | CPU per turn (÷ bare client's) | loop delay p99 | throughput | cores used | peak RSS per run |`,
  );
  console.log("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
  const byPhase = new Map<ScaleoutPhase, ProcessFigures[]>();
  for (const phase of result.phases) {
    const all = phase.runs.map((run) => figures(run, n, bareOne, bareMany));
    byPhase.set(phase, all);
    phase.runs.forEach((run, index) => {
      const f = all[index]!;
      console.log(
        `| ${phase.processes} × ${n} / process ${index + 1} | ${run.runsOk} | ${ms(f.turn50)} / ${ms(f.turn99)} | ${ms(f.added50)} / ${ms(f.added99)} | ${ms(f.addedMany50)} / ${ms(f.addedMany99)} | ${ms(f.cpuPerTurnMs)} (${ratio(f.cpuRatio)}) | ${ms(f.eldP99)} | ${f.turnsPerS.toFixed(0)} turns/s | ${f.cores.toFixed(2)} | ${kib((run.rssPeak - run.rssBase) / n)} |`,
      );
    });
  }
  console.log("");
  const one = single ? byPhase.get(single)?.[0] : undefined;
  const several = many ? (byPhase.get(many) ?? []) : [];
  if (one && many && several.length > 0) {
    const avg = (pick: (f: ProcessFigures) => number) => mean(several.map(pick));
    console.log(
      `Ratios, ${p} × ${n} (mean of its processes) ÷ 1 × ${n}: CPU per turn ${ratio(avg((f) => f.cpuPerTurnMs) / one.cpuPerTurnMs)}, turn p50 ${ratio(avg((f) => f.turn50) / one.turn50)}, turn p99 ${ratio(avg((f) => f.turn99) / one.turn99)}, loop delay p99 ${ratio(avg((f) => f.eldP99) / one.eldP99)}, throughput per process ${ratio(avg((f) => f.turnsPerS) / one.turnsPerS)} (all processes together ${ratio((avg((f) => f.turnsPerS) * several.length) / one.turnsPerS)}); added per turn p50 ${signed(avg((f) => f.added50) - one.added50)}, p99 ${signed(avg((f) => f.added99) - one.added99)}.`,
    );
    console.log(coresLine(single!, many, quantile(bareOne.intervals, 0.5), n));
    console.log("");
    const linear = several.every(
      (f) =>
        f.complete &&
        f.added50 <= target.p50 &&
        f.added99 <= target.p99 &&
        f.eldP99 <= STREAM_ELD_P99_MS &&
        f.cpuRatio <= STREAM_CPU_RATIO &&
        f.turnsPerS >= SCALEOUT_THROUGHPUT_SHARE * one.turnsPerS,
    );
    const worst = (pick: (f: ProcessFigures) => number) => Math.max(...several.map(pick));
    verdicts.push(
      `${verdict(linear)}  scale-out ${p} × ${n}: every process like 1 × ${n} (added vs model alone at ${n} ≤ ${target.p50} / ≤ ${target.p99} ms: worst p50 ${ms(worst((f) => f.added50))} / p99 ${ms(worst((f) => f.added99))}; loop delay p99 ≤ ${STREAM_ELD_P99_MS} ms: worst ${ms(worst((f) => f.eldP99))}; CPU ≤ ${STREAM_CPU_RATIO}× bare: worst ${ratio(worst((f) => f.cpuRatio))}; throughput ≥ ${SCALEOUT_THROUGHPUT_SHARE}× the single process's: lowest ${ratio(Math.min(...several.map((f) => f.turnsPerS)) / one.turnsPerS)}) on ${availableParallelism()} CPUs`,
    );
  }
}

/** Where the CPU went in each phase, and how many cores linear scale-out would need. */
function coresLine(single: ScaleoutPhase, many: ScaleoutPhase, modelTurnMs: number, n: number): string {
  const cores = availableParallelism();
  const spent = (phase: ScaleoutPhase, u: PhaseUsage) => {
    const workers = phase.runs.reduce((sum, run) => sum + run.cpuMicros / 1e6, 0);
    const ours = workers + u.serverS + u.redisS + u.gatewayS;
    const turns = phase.runs.reduce((sum, run) => sum + run.turns, 0);
    const per = (seconds: number) => (seconds / u.wallS).toFixed(2);
    return {
      workersPerTurn: workers / Math.max(1, turns),
      othersPerTurn: (ours - workers) / Math.max(1, turns),
      others: (u.machineS - ours) / u.wallS,
      text: `${phase.processes} × ${n}: workers ${per(workers)}, model server ${per(u.serverS)}, Redis ${per(u.redisS)}, gateway ${per(u.gatewayS)} = ${per(ours)} cores over ${u.wallS.toFixed(2)} s (machine busy ${per(u.machineS)}, other processes ${per(u.machineS - ours)})`,
    };
  };
  const s1 = spent(single, single.usage);
  const sp = spent(many, many.usage);
  // Cores used over the phase's wall time shrink when the phase is starved and stretched; the need is the
  // CPU each turn took at 1 × N (worker; model server, Redis and gateway) times the turn rate at full speed
  // (N runs, one turn per model-alone turn time), for P processes.
  const rate = (many.processes * n) / (modelTurnMs / 1000);
  const needed = rate * (s1.workersPerTurn + s1.othersPerTurn);
  // The machine is shared: what other processes took during the phases is not free for ours.
  const free = cores - Math.max(s1.others, sp.others);
  const allow =
    needed > cores
      ? `${cores} cores do not allow it: the ${many.processes} × ${n} figures here measure processes sharing cores, not scale-out`
      : needed > free
        ? `${cores} cores would, but other processes left only ${free.toFixed(2)} free: the ${many.processes} × ${n} figures measure sharing the rest`
        : `${cores} cores allow it (other processes left ${free.toFixed(2)} free)`;
  return `Cores: ${cores} on this machine. ${s1.text}; ${sp.text}. Linear ${many.processes} × ${n} at full speed is ${rate.toFixed(0)} turns/s × (${ms(s1.workersPerTurn * 1000)} worker + ${ms(s1.othersPerTurn * 1000)} model server, Redis, gateway CPU per turn at 1 × ${n}) = ${needed.toFixed(2)} cores; ${allow}.`;
}
