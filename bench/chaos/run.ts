import { mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { FakeOpenAIServer } from "../../test/fakes/openai-server.js";
import { freePort } from "../../test/support/net.js";
import { seededRandom } from "../../test/support/random.js";
import { type AuditDetails, audit, type ChaosCounts, isQuiet } from "./audit.js";
import { Chaos, type ChaosApplied } from "./chaos.js";
import { removeNow, removeOnExit } from "./children.js";
import { ChaosModel } from "./model.js";
import { CliChild } from "./processes.js";
import { PrivateRedis } from "./redis-server.js";
import { Replayer } from "./replay.js";
import { Traffic } from "./traffic.js";

/** Options of {@link runChaos}; see `bench/chaos.bench.ts` for the command-line names and defaults. */
export interface ChaosOptions {
  threads: number;
  messages: number;
  workers: number;
  /** How long traffic is sent (ms); chaos happens inside this window. */
  durationMs: number;
  seed: number;
  kills: number;
  pauses: number;
  restarts: number;
  outages: number;
  /** Share of accepted messages replayed with the same id (platform retries). */
  retryRate: number;
  /** Longest wait for quiescence after traffic ended (ms). */
  settleMs: number;
  /** Pause before every chunk the fake model streams (ms). */
  modelDelayMs: number;
  /** A directory to write every child's full output to (`<name>.log`), kept after the run. */
  logsDir?: string;
  /** Progress lines (default: none). */
  log?: (line: string) => void;
}

/** Everything a chaos run measured. */
export interface ChaosReport {
  options: Omit<ChaosOptions, "log">;
  counts: ChaosCounts;
  chaos: ChaosApplied;
  replays: { done: number; failed: number };
  details: AuditDetails;
  model: { requests: number; toolCalls: number; answers: number };
  /** Counted log messages of the workers and the gateway (run failed, lost the thread lease, …). */
  logs: Record<string, number>;
  /** Whether the system reached quiescence within `settleMs`, and how long it took. */
  settled: { quiet: boolean; ms: number };
  elapsedMs: number;
}

const ROOT = resolve(import.meta.dirname, "../..");
/** The workers' lease and BullMQ lock (src/runs defaults); a pause must outlast both. */
const LEASE_MS = 30_000;

/**
 * One bounded chaos run: a private redis-server (AOF, fsync always), the fake model, `threadline gateway`
 * and `options.workers` × `threadline worker` as separate processes; traffic through the playground's HTTP
 * API while {@link Chaos} kills, pauses and restarts; then the chaos stops, the run waits (at most
 * `settleMs`) until nothing is queued or running, and the audit counts what the invariants forbid. Every
 * child process and the temporary directory are gone when it resolves or rejects.
 */
export async function runChaos(options: ChaosOptions): Promise<ChaosReport> {
  const log = options.log ?? (() => {});
  const started = performance.now();
  const random = seededRandom(options.seed);
  const dir = mkdtempSync(join(tmpdir(), "threadline-chaos-"));
  removeOnExit(dir);
  const redisDir = join(dir, "redis");
  mkdirSync(redisDir);
  const executionsFile = join(dir, "executions.log");
  const closers: (() => Promise<unknown>)[] = [];
  try {
    const redis = await PrivateRedis.start(redisDir);
    closers.push(() => redis.kill());
    const server = await FakeOpenAIServer.start();
    closers.push(() => server.close());
    const model = new ChaosModel(server, options.modelDelayMs);
    const port = await freePort();
    const env: Record<string, string> = {
      REDIS_URL: redis.url,
      THREADLINE_PREFIX: "chaos",
      PLAYGROUND_PORT: String(port),
      OPENAI_BASE_URL: server.baseURL,
      OPENAI_API_KEY: "sk-chaos",
      OPENAI_MODEL: "fake-model",
      OPS_PORT: "0",
      LOG_LEVEL: "info",
      THREADLINE_CONFIG: join(ROOT, "test/fixtures/chaos/threadline.config.ts"),
      THREADLINE_TOOLS_MODULE: join(ROOT, "test/fixtures/chaos/tools.ts"),
      THREADLINE_WORKSPACE_DIR: join(dir, "workspaces"),
      CHAOS_EXECUTIONS_FILE: executionsFile,
    };
    const logsDir = options.logsDir;
    if (logsDir) mkdirSync(logsDir, { recursive: true });
    const child = (name: string, role: "worker" | "gateway", ready: string) =>
      logsDir
        ? new CliChild(name, role, env, ready, join(logsDir, `${name}.log`))
        : new CliChild(name, role, env, ready);
    const workers = Array.from({ length: options.workers }, (_, i) =>
      child(`worker-${i + 1}`, "worker", "worker started"),
    );
    const gateway = child("gateway", "gateway", "playground: open");
    const children = [...workers, gateway];
    closers.push(() => Promise.all(children.map((child) => child.kill())));
    await Promise.all(children.map((child) => child.start()));
    const replayer = await Replayer.create(env);
    closers.push(() => replayer.close());
    log(`chaos: seed ${options.seed}; ${options.workers} workers and a gateway up; sending`);

    const traffic = new Traffic({
      url: `http://127.0.0.1:${port}`,
      threads: options.threads,
      messages: options.messages,
      durationMs: options.durationMs,
      retryRate: options.retryRate,
      random,
      replayer,
    });
    const chaos = new Chaos(
      workers,
      redis,
      random,
      {
        kills: options.kills,
        pauses: options.pauses,
        restarts: options.restarts,
        outages: options.outages,
        windowMs: options.durationMs,
        pauseMs: [LEASE_MS + 5_000, LEASE_MS + 12_000],
        outageMs: [2_000, 6_000],
      },
      log,
    );
    log(`chaos: plan ${chaos.planned().join(" ")}`);
    const progress = setInterval(
      () => log(`chaos: ${traffic.sent} sent, ${((performance.now() - started) / 1000).toFixed(0)} s`),
      10_000,
    );
    closers.push(async () => clearInterval(progress));
    const chaosDone = chaos.run();
    await traffic.run();
    chaos.stop();
    await chaosDone;
    await chaos.settle();
    clearInterval(progress);
    log("chaos: traffic done, chaos stopped; waiting for quiescence");

    const settling = performance.now();
    let quiet = false;
    let calm = 0;
    while (performance.now() - settling < options.settleMs) {
      // Quiet three checks in a row: a run between two checks does not pass for quiet.
      calm = (await isQuiet(replayer.connection, replayer.config.prefix, traffic.threads, replayer.queue))
        ? calm + 1
        : 0;
      if (calm >= 3) {
        quiet = true;
        break;
      }
      await new Promise((done) => setTimeout(done, 500));
    }
    const settledMs = performance.now() - settling;
    const { counts, details } = await audit(
      replayer.connection,
      replayer.config.prefix,
      traffic.threads,
      executionsFile,
      replayer.queue,
    );
    const logs: Record<string, number> = {};
    for (const child of children)
      for (const [text, count] of child.counted) logs[text] = (logs[text] ?? 0) + count;
    const { log: _log, logsDir: _logs, ...rest } = options;
    return {
      options: rest,
      counts,
      chaos: chaos.applied,
      replays: traffic.replays,
      details,
      model: { requests: model.requests, toolCalls: model.toolCalls, answers: model.answers },
      logs,
      settled: { quiet, ms: settledMs },
      elapsedMs: performance.now() - started,
    };
  } finally {
    for (const close of closers.reverse()) await close().catch(() => {});
    removeNow(dir);
  }
}

/** The invariant counts that must be 0. */
export const INVARIANT_COUNTS = ["lost", "duplicated", "reordered", "executedTwice", "stuck"] as const;

/** A human-readable report of {@link runChaos}. */
export function formatReport(report: ChaosReport): string {
  const { counts, chaos, details, options } = report;
  const examples = (kind: keyof AuditDetails["examples"]) =>
    details.examples[kind].length > 0 ? `   e.g. ${details.examples[kind].join("; ")}` : "";
  const states = Object.entries(details.lostByState)
    .map(([state, n]) => `${n} ${state}`)
    .join(", ");
  return [
    `Chaos run (seed ${options.seed}): ${options.threads} threads, ${options.workers} workers, ${(options.durationMs / 1000).toFixed(0)} s of traffic, ${(report.elapsedMs / 1000).toFixed(0)} s in all`,
    "",
    `messages sent        ${counts.sent}  (accepted ${counts.accepted}, refused ${counts.refused})`,
    `lost                 ${counts.lost}${states ? `  (intake state: ${states})` : ""}${examples("lost")}`,
    `duplicated           ${counts.duplicated}${examples("duplicated")}`,
    `reordered            ${counts.reordered}${examples("reordered")}`,
    `executed twice       ${counts.executedTwice}${examples("executedTwice")}`,
    `stuck threads        ${counts.stuck}${examples("stuck")}`,
    "",
    `chaos applied        ${chaos.kills} worker kills, ${chaos.pauses} pauses (${chaos.pausedSeconds.toFixed(0)} s), ${chaos.restarts} Redis restarts, ${chaos.outages} outages (${chaos.outageSeconds.toFixed(1)} s), ${report.replays.done} platform retries${chaos.skipped ? `, ${chaos.skipped} skipped` : ""}${report.replays.failed ? `, ${report.replays.failed} retries failed` : ""}`,
    `settled              ${report.settled.quiet ? "yes" : "NO"} after ${(report.settled.ms / 1000).toFixed(1)} s`,
    `also                 ${details.executions} tool executions (${details.executedUnrecorded} not in any transcript), ${details.toolCalls} tool calls in transcripts, ${details.errorAnswers} error answers, ${details.unanswered} threads unanswered at the end; model requests ${report.model.requests}`,
    `process logs         ${
      Object.entries(report.logs)
        .map(([text, n]) => `${text}: ${n}`)
        .join(", ") || "nothing notable"
    }`,
  ].join("\n");
}
