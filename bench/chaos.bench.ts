/**
 * Chaos benchmark: do the run invariants (DESIGN.md §4) hold on a bad day? N people write in N threads
 * through the playground's HTTP API while `threadline worker` processes are SIGKILLed (and started again)
 * and SIGSTOPped for longer than their lease, the private Redis (AOF, `appendfsync always`) is shut down and
 * started again from the same AOF — at once, or after an outage of a few seconds while messages keep
 * arriving — and platform retries hand messages a second time, with the same id, to a second gateway
 * replica. The model is a local fake whose every answer calls the side-effecting `record` tool once with a
 * fresh nonce (the tool appends it to a file with O_APPEND, so executions are counted outside Redis).
 *
 * Then the chaos stops, the run waits (bounded) until nothing is queued or running, and prints: messages
 * sent, lost (accepted but not in the thread's transcript), duplicated, reordered, executed twice, stuck
 * threads, and the chaos applied. Exits 1 when any of those counts is not 0. Everything it starts (the
 * gateway, the workers, redis-server, temp files) is gone when it exits, Ctrl-C and errors included.
 *
 *   npm run chaos                                              the target size (~15 min)
 *   npm run chaos -- --messages 3000 --duration 150 --kills 6 --restarts 2
 *   npm run chaos -- --seed 42                                 replay a run's plan
 *
 * Options: --threads, --messages, --workers, --duration (s), --seed, --kills, --pauses, --restarts,
 * --outages, --retry-rate (0–1), --settle (s), --model-delay (ms per streamed chunk), --logs DIR (every
 * process's full output, kept).
 */
import { parseArgs } from "node:util";
import { exitOnSignals } from "./chaos/children.js";
import { formatReport, INVARIANT_COUNTS, runChaos } from "./chaos/run.js";

const { values } = parseArgs({
  options: {
    threads: { type: "string", default: "200" },
    messages: { type: "string", default: "20000" },
    workers: { type: "string", default: "3" },
    duration: { type: "string", default: "780" },
    seed: { type: "string" },
    kills: { type: "string", default: "24" },
    pauses: { type: "string", default: "4" },
    restarts: { type: "string", default: "6" },
    outages: { type: "string", default: "2" },
    "retry-rate": { type: "string", default: "0.05" },
    settle: { type: "string", default: "120" },
    "model-delay": { type: "string", default: "5" },
    logs: { type: "string" },
  },
});

function number(name: keyof typeof values, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const value = Number(values[name]);
  if (!Number.isFinite(value) || value < min || value > max) {
    process.stderr.write(`chaos: --${name} must be a number from ${min} to ${max}, got ${values[name]}\n`);
    process.exit(2);
  }
  return value;
}

exitOnSignals();
const seed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : number("seed", 0, 2 ** 32 - 1);
const options = {
  threads: number("threads", 1),
  messages: number("messages", 1),
  workers: number("workers", 1, 32),
  durationMs: number("duration", 1) * 1000,
  seed,
  kills: number("kills", 0),
  pauses: number("pauses", 0),
  restarts: number("restarts", 0),
  outages: number("outages", 0),
  retryRate: number("retry-rate", 0, 1),
  settleMs: number("settle", 1) * 1000,
  modelDelayMs: number("model-delay", 0),
  log: (line: string) => process.stderr.write(`${line}\n`),
  ...(values.logs ? { logsDir: values.logs } : {}),
};
process.stderr.write(`chaos: seed ${seed} (repeat with --seed ${seed})\n`);
try {
  const report = await runChaos(options);
  process.stdout.write(`\n${formatReport(report)}\n`);
  process.exit(INVARIANT_COUNTS.some((count) => report.counts[count] > 0) ? 1 : 0);
} catch (err) {
  process.stderr.write(`chaos: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
}
