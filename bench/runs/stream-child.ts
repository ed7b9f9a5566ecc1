/** Child `stream`: one worker streaming N runs. */
import { monitorEventLoopDelay } from "node:perf_hooks";
import { z } from "zod";
import type { StreamFn } from "../../src/agent/index.js";
import { parseThreadId } from "../../src/chat/index.js";
import { createOpenAIStreamFn, openAIModel } from "../../src/llm/index.js";
import {
  type ChatUserMessage,
  createRunQueue,
  Intake,
  type RunTool,
  type RunWorkerHandle,
} from "../../src/runs/index.js";
import { MemoryOutbound } from "../../test/fakes/memory-outbound.js";
import { connect, requireRedis } from "../../test/support/redis.js";
import { sendToParent } from "../support/child.js";
import { startCpuProfile } from "../support/profile.js";
import { type ChildArgs, parentSaysGo, type StreamResult } from "./protocol.js";
import {
  benchConfig,
  chatMessage,
  gc,
  now,
  okResult,
  scaleoutRunPrefix,
  sleep,
  startBenchWorker,
  streamRunId,
  TURNS,
  withTimeout,
} from "./settings.js";

export function noopTool(): RunTool {
  return {
    name: "noop",
    description: "Does nothing.",
    parameters: z.object({}),
    execute: async () => okResult,
  };
}

export async function streamChild(args: ChildArgs): Promise<void> {
  const config = benchConfig(args.prefix);
  const redis = connect();
  const bull = connect({ blocking: true });
  await requireRedis(redis);
  const chat = new MemoryOutbound({ recordOps: false, limits: { minEditIntervalMs: args.editIntervalMs } });
  const inner = createOpenAIStreamFn({ apiKey: "sk-bench", maxRetries: 0 });
  const runs = new Map<string, { starts: number[]; ends: number[] }>();
  const streamFn: StreamFn = (model, context, options) => {
    const start = now();
    const id = (context.messages[0] as ChatUserMessage | undefined)?.chatMessageId ?? "";
    let run = runs.get(id);
    if (!run) {
      run = { starts: [], ends: [] };
      runs.set(id, run);
    }
    const record = run;
    record.starts.push(start);
    const out = inner(model, context, options);
    void Promise.resolve(out)
      .then((stream) => stream.result())
      .then(() => {
        record.ends.push(now());
      });
    return out;
  };
  const agent = {
    model: openAIModel({ id: "stream", baseUrl: args.baseURL }),
    streamFn,
    tools: [noopTool()],
  };
  // Scale-out: each process warms up on a queue of its own before its measured worker starts, because on
  // the shared queue the other process's worker would take some of its warm-up runs. Its concurrency is
  // exactly N, so of the processes × N runs the parent submits at once each worker takes exactly N (none
  // finishes before all are taken: a run lasts 10 model turns).
  const scaleOut = args.process;
  if (scaleOut) await warmUpOnOwnQueue(args, chat, agent, `${scaleOut.of}-${scaleOut.index}`);
  const { handle, completions } = await startBenchWorker({
    redis,
    bull,
    config,
    chat,
    agent,
    concurrency: scaleOut ? args.n : Math.max(args.n, args.warm),
  });
  handle.worker.on("failed", (job, err) => {
    console.error(`[stream] run failed: ${err.message}`);
    if (job) completions.fire(parseThreadId(job.data.threadId).thread, now());
  });

  // Warm-up with a gateway of its own, then the baseline.
  const warmBull = connect({ blocking: true });
  if (!scaleOut) {
    const warmIntake = new Intake(redis, createRunQueue(warmBull, args.prefix), config);
    const warmIds = Array.from({ length: args.warm }, (_, i) => `w${args.n}-${i}`);
    await Promise.all(warmIds.map((id) => warmIntake.submit(chatMessage(id, "go"))));
    await withTimeout(Promise.all(warmIds.map((id) => completions.wait(id))), 60_000, "warm-up runs");
  } else {
    sendToParent({ type: "ready" });
    await withTimeout(parentSaysGo(), 60_000, "the parent's go");
  }
  gc();
  await sleep(200);
  gc();
  const base = process.memoryUsage();
  let rssPeak = base.rss;
  let heapPeak = base.heapUsed;
  // `process.memoryUsage()` walks the heap's spaces: at 40 calls a second it was 1 % of the worker's CPU,
  // charged to Threadline. RSS alone is a cheap read; the heap is sampled less often.
  let samples = 0;
  const sampler = setInterval(() => {
    rssPeak = Math.max(rssPeak, process.memoryUsage.rss());
    if (samples++ % 10 === 0) heapPeak = Math.max(heapPeak, process.memoryUsage().heapUsed);
  }, 25);
  const eld = monitorEventLoopDelay({ resolution: 5 });
  const stalls = stallCounter();
  const edits0 = chat.counts.edit;
  const posts0 = chat.counts.post;
  // Scale-out: this process measures the N runs its worker took (`ids` fills as they complete).
  const ids = scaleOut ? [] : Array.from({ length: args.n }, (_, i) => streamRunId(args.n, i));
  const done: Promise<unknown> = scaleOut
    ? ownRuns(handle.worker, scaleoutRunPrefix(scaleOut.of), args.n, ids)
    : Promise.all(ids.map((id) => completions.wait(id)));
  const profiler = args.profileDir ? await startCpuProfile(250) : undefined;
  eld.enable();
  stalls.start();
  const cpu0 = process.cpuUsage();
  const t0 = now();
  sendToParent({ type: "ready" });
  await withTimeout(done, 90_000, `${args.n} streaming runs`);
  const cpu = process.cpuUsage(cpu0);
  const wallMs = now() - t0;
  eld.disable();
  stalls.stop();
  clearInterval(sampler);
  if (profiler && args.profileDir) {
    const file = `${args.profileDir}/stream-n${args.n}${scaleOut ? `-p${scaleOut.index}of${scaleOut.of}` : ""}.cpuprofile`;
    await profiler.stop(file);
    process.stderr.write(`[stream] CPU profile of the measured phase: ${file}\n`);
  }

  const intervals: number[] = [];
  const gaps: number[] = [];
  const modelTimes: number[] = [];
  const firstStarts: number[] = [];
  let runsOk = 0;
  let turns = 0;
  for (const id of ids) {
    const run = runs.get(id);
    if (!run || run.starts.length !== TURNS || run.ends.length !== TURNS) continue;
    runsOk++;
    turns += TURNS;
    firstStarts.push(run.starts[0]!);
    for (let k = 0; k < TURNS; k++) modelTimes.push(run.ends[k]! - run.starts[k]!);
    for (let k = 0; k + 1 < TURNS; k++) {
      intervals.push(run.starts[k + 1]! - run.starts[k]!);
      gaps.push(run.starts[k + 1]! - run.ends[k]!);
    }
  }
  const result: StreamResult = {
    n: args.n,
    runsOk,
    turns,
    intervals,
    gaps,
    modelTimes,
    cpuMicros: cpu.user + cpu.system,
    wallMs,
    rampMs: firstStarts.length > 0 ? Math.max(...firstStarts) - Math.min(...firstStarts) : Number.NaN,
    rssBase: base.rss,
    rssPeak,
    heapBase: base.heapUsed,
    heapPeak,
    eldP50: eld.percentile(50) / 1e6,
    eldP99: eld.percentile(99) / 1e6,
    eldMax: eld.max / 1e6,
    stalls25: stalls.count,
    stalledMs: stalls.totalMs,
    edits: chat.counts.edit - edits0,
    posts: chat.counts.post - posts0,
  };
  sendToParent({ type: "result", data: result });
  await handle.close();
  for (const connection of [redis, bull, warmBull]) connection.disconnect();
}

/**
 * Warm-up runs on a queue under `<prefix>:warm<name>` (deleted with the bench prefix) with a worker of its
 * own (same code, chat and stream function as the measured one), closed before the measured worker starts.
 */
async function warmUpOnOwnQueue(
  args: ChildArgs,
  chat: MemoryOutbound,
  agent: Parameters<typeof startBenchWorker>[0]["agent"],
  name: string,
): Promise<void> {
  const config = benchConfig(`${args.prefix}:warm${name}`);
  const redis = connect();
  const bull = connect({ blocking: true });
  const gatewayBull = connect({ blocking: true });
  const queue = createRunQueue(gatewayBull, config.prefix);
  const intake = new Intake(redis, queue, config);
  const { handle, completions } = await startBenchWorker({
    redis,
    bull,
    config,
    chat,
    agent,
    concurrency: args.warm,
  });
  const ids = Array.from({ length: args.warm }, (_, i) => `w${args.n}-p${name}-${i}`);
  await Promise.all(ids.map((id) => intake.submit(chatMessage(id, "go"))));
  await withTimeout(Promise.all(ids.map((id) => completions.wait(id))), 60_000, "warm-up runs");
  await handle.close();
  await queue.close();
  for (const connection of [redis, bull, gatewayBull]) connection.disconnect();
}

/**
 * Resolves once `worker` has finished `count` runs whose thread name starts with `prefix` (completed, or
 * failed, as the single-process scenario counts them), pushing their names to `ids`.
 */
function ownRuns(
  worker: RunWorkerHandle["worker"],
  prefix: string,
  count: number,
  ids: string[],
): Promise<void> {
  return new Promise((resolve) => {
    const finished = (job: { data: { threadId: string } } | undefined) => {
      const name = job ? parseThreadId(job.data.threadId).thread : "";
      if (!name.startsWith(prefix) || ids.includes(name)) return;
      ids.push(name);
      if (ids.length === count) resolve();
    };
    worker.on("completed", finished);
    worker.on("failed", finished);
  });
}

/** Counts event-loop stalls ≥ 25 ms: a 5 ms interval timer that fires late by that much. */
export function stallCounter() {
  let timer: NodeJS.Timeout | undefined;
  let last = 0;
  const counter = {
    count: 0,
    totalMs: 0,
    start() {
      last = now();
      timer = setInterval(() => {
        const t = now();
        const late = t - last - 5;
        last = t;
        if (late >= 25) {
          counter.count++;
          counter.totalMs += late;
        }
      }, 5);
    },
    stop() {
      clearInterval(timer);
    },
  };
  return counter;
}
