/** The parent: options, children, the gateway side of the scenarios, cleanup. */
import { randomUUID } from "node:crypto";
import { mkdirSync } from "node:fs";
import type { Redis } from "ioredis";
import { createRunQueue, Intake, type RunQueue } from "../../src/runs/index.js";
import { connect, deletePrefix, requireRedis } from "../../test/support/redis.js";
import { Child } from "../support/child.js";
import type { BareResult, ChildArgs, LatencyResult, ParkedResult, StreamResult } from "./protocol.js";
import { type Results, report } from "./report.js";
import { runScaleout } from "./scaleout.js";
import {
  benchConfig,
  chatMessage,
  DEADLINE_MS,
  parkedRunId,
  SELF,
  STREAM_WARMUP_RUNS,
  streamRunId,
} from "./settings.js";

/** Children run with `--expose-gc`; `RUNS_BENCH_PROFILE_DIR` adds a whole-process CPU profile of each but the server. */
export function childExecArgv(kind: string): string[] {
  const execArgv = [...process.execArgv, "--expose-gc"];
  const profileDir = process.env.RUNS_BENCH_PROFILE_DIR;
  if (profileDir && kind !== "server") execArgv.push("--cpu-prof", `--cpu-prof-dir=${profileDir}`);
  return execArgv;
}

export interface Options {
  rounds: number;
  ns: number[];
  parked: number;
  /** MemoryOutbound's `minEditIntervalMs` in the streaming scenario (its default is 0). */
  editIntervalMs: number;
  only: string[];
  /** `--profile <dir>`: a CPU profile of each streaming worker's measured phase. */
  profileDir: string | undefined;
  /** `--processes <P>`: worker processes of the scale-out scenario (default 2); giving it adds the scenario. */
  processes: number;
  /** `--per-process <N>`: runs each scale-out process carries (default 150). */
  perProcess: number;
}

export function parseOptions(argv: string[]): Options {
  const value = (name: string) => {
    const index = argv.indexOf(name);
    return index >= 0 ? argv[index + 1] : undefined;
  };
  return {
    rounds: Number(value("--rounds") ?? 300),
    ns: (value("--ns") ?? "50,150,300").split(",").map(Number),
    parked: Number(value("--parked") ?? 1000),
    editIntervalMs: Number(value("--edit-interval") ?? 0),
    // The scale-out scenario runs when named (`--only scaleout`) or when `--processes` is given.
    only: [
      ...(value("--only") ?? "latency,stream,parked").split(","),
      ...(value("--processes") !== undefined ? ["scaleout"] : []),
    ],
    profileDir: value("--profile"),
    processes: Number(value("--processes") ?? 2),
    perProcess: Number(value("--per-process") ?? 150),
  };
}

export async function countKeys(redis: Redis, prefix: string): Promise<number> {
  let count = 0;
  for (const pattern of [`${prefix}:*`, `{${prefix}:*`]) {
    let cursor = "0";
    do {
      const [next, keys] = await redis.scan(cursor, "MATCH", pattern, "COUNT", 1000);
      cursor = next;
      count += keys.length;
    } while (cursor !== "0");
  }
  return count;
}

export async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  if (options.profileDir) mkdirSync(options.profileDir, { recursive: true });
  const prefix = `tlbench-runs-${randomUUID().slice(0, 8)}`;
  const redis = connect();
  await requireRedis(redis);
  const redisVersion = /redis_version:(\S+)/.exec(await redis.info("server"))?.[1] ?? "?";
  const gatewayBull = connect({ blocking: true });
  const config = benchConfig(prefix);
  const queue: RunQueue = createRunQueue(gatewayBull, prefix);
  const intake = new Intake(redis, queue, config);
  const children = new Set<Child>();
  const start = (kind: string, args: Partial<ChildArgs>) => {
    const child = new Child(kind, SELF, ["--child", kind, JSON.stringify(args)], childExecArgv(kind));
    children.add(child);
    return child;
  };
  const startedAt = Date.now();
  let cleanedUp: Promise<number> | undefined;
  const cleanup = () => {
    cleanedUp ??= (async () => {
      await Promise.all([...children].map((child) => child.stop()));
      await queue.close().catch(() => {});
      await deletePrefix(redis, prefix);
      const left = await countKeys(redis, prefix);
      gatewayBull.disconnect();
      redis.disconnect();
      return left;
    })();
    return cleanedUp;
  };
  const deadline = setTimeout(() => {
    console.error(`runs bench: deadline of ${DEADLINE_MS / 1000} s reached; stopping and cleaning up`);
    void cleanup().finally(() => process.exit(2));
  }, DEADLINE_MS);
  deadline.unref();
  process.once("SIGINT", () => void cleanup().finally(() => process.exit(130)));

  const results: Results = { streams: [] };
  let failure: unknown;
  let keysLeft = -1;
  const progress = (text: string) =>
    process.stderr.write(`[${((Date.now() - startedAt) / 1000).toFixed(0)} s] ${text}\n`);
  try {
    const server = start("server", {});
    const baseURL = (await server.next("ready", 30_000)).baseURL ?? "";

    if (options.only.includes("latency")) {
      progress(`handoff latencies: ${options.rounds} rounds`);
      const latency = start("latency", { prefix, rounds: options.rounds });
      results.latency = await latency.result<LatencyResult>(120_000);
      await latency.stop();
    }

    for (const n of options.only.includes("stream") ? options.ns : []) {
      progress(`streaming: N = ${n}, model alone`);
      const bare = start("bare", { baseURL, n });
      const bareResult = await bare.result<BareResult>(60_000);
      await bare.stop();

      progress(`streaming: N = ${n}, one Threadline worker`);
      const worker = start("stream", {
        prefix,
        baseURL,
        n,
        warm: STREAM_WARMUP_RUNS,
        editIntervalMs: options.editIntervalMs,
        ...(options.profileDir ? { profileDir: options.profileDir } : {}),
      });
      await worker.next("ready", 90_000);
      const submitted = await Promise.all(
        Array.from({ length: n }, (_, i) => intake.submit(chatMessage(streamRunId(n, i), "go"))),
      );
      const notStarted = submitted.filter((result) => result.kind !== "started").length;
      if (notStarted > 0) throw new Error(`${notStarted} streaming runs did not start`);
      const run = await worker.result<StreamResult>(100_000);
      await worker.stop();
      results.streams.push({ n, bare: bareResult, run });
    }

    if (options.only.includes("scaleout")) {
      results.scaleout = await runScaleout(
        {
          start,
          intake,
          redis,
          prefix,
          baseURL,
          serverPid: server.process.pid,
          editIntervalMs: options.editIntervalMs,
          progress,
        },
        options.processes,
        options.perProcess,
      );
    }

    if (options.only.includes("parked") && options.parked > 0) {
      progress(`parked on approvals: ${options.parked} runs`);
      const parked = start("parked", { prefix, baseURL, n: options.parked, warm: 50 });
      await parked.next("ready", 90_000);
      const submitted = await Promise.all(
        Array.from({ length: options.parked }, (_, i) =>
          intake.submit(chatMessage(parkedRunId(i), "deploy to prod")),
        ),
      );
      const notStarted = submitted.filter((result) => result.kind !== "started").length;
      if (notStarted > 0) throw new Error(`${notStarted} parked runs did not start`);
      results.parked = await parked.result<ParkedResult>(100_000);
      await parked.stop();
    }
  } catch (err) {
    failure = err;
  } finally {
    keysLeft = await cleanup();
    clearTimeout(deadline);
  }

  report(results, options, (Date.now() - startedAt) / 1000, keysLeft, redisVersion);
  if (failure) {
    console.error(failure instanceof Error ? (failure.stack ?? failure.message) : failure);
    process.exitCode = 1;
  }
}
