/**
 * Runs on Redis and BullMQ (src/runs): handoff latencies from the gateway into a worker, streaming runs
 * held by one worker, and the memory of runs parked on approvals. Everything runs in one go on the local
 * Redis (REDIS_URL, default redis://127.0.0.1:6379) under a fresh key prefix that is deleted at the end
 * (also when a scenario fails or the 4-minute deadline fires).
 *
 * This script orchestrates, acts as the gateway of the streaming and parked scenarios, and re-invokes
 * itself as child processes (`--child <kind> <json>`), so that each measured worker's CPU and RSS are its
 * own:
 *   server   FakeOpenAIServer (test/fakes) for the whole run. The streaming model answers every turn with
 *            20 SSE chunks, one every 10 ms (200 ms), ending in a tool call (a final text on turn 10).
 *   latency  a gateway (Intake, own connections) + one run worker + a bare BullMQ queue/worker in one
 *            process, with an in-process instant model. One sample of each handoff per round, the order
 *            rotating every round (drifting load hits every metric alike), after warm-up rounds.
 *   bare     N concurrent plain node:http loops against the server, 10 sequential turns each: what the
 *            model alone takes per turn at that load (the baseline of the streaming scenario).
 *   stream   one run worker (BullMQ concurrency N) with createOpenAIStreamFn against the server,
 *            createConvertToLlm, an instant tool, rendering into one MemoryOutbound (recordOps off). The
 *            main process submits N runs of 10 turns at once. Warm-up runs first, then RSS/heap baseline.
 *   parked   one run worker; the main process submits 1,000 runs whose first tool call needs approval;
 *            RSS and heap beyond the warmed-up, collected baseline once every approval card is posted.
 *
 * Measurement points (nothing in src/ is changed; every hook is a public seam):
 *   - processor begins: the worker's OutboundResolver, called once in the run session's constructor;
 *   - run starts: the first call of the stream function (the model request);
 *   - steering: `tlDrain` wrapped on the worker's Redis connection (scripts are looked up per call), so the
 *     handoff is the gateway's tlSubmit round trip + the worker's tlDrain call that returned the message,
 *     i.e. the critical path if the turn boundary comes right after the message was stored. The tool that
 *     blocks the run is released as soon as submit resolves; the rows after it show the rest of the way to
 *     the model request that contains the steering message;
 *   - approval: `Intake.decide` → the tool's `execute` (the card was posted, the gate is waiting);
 *   - streaming turn: from one model request of a run to its next one (stream, render, persist, tool,
 *     drain), compared with the bare client's turn at the same N in the same run, and with the nominal
 *     200 ms.
 *
 * The floor of the handoff ratios is one PING after a 2 ms pause (every handoff starts in a process that
 * was waiting for something); back-to-back PINGs are shown for reference. Targets are checked on p50/p99
 * and printed as PASS/FAIL; the streaming target is checked against the model alone at the same N
 * (Threadline's own share), with the literal "turn − 200 ms" shown beside it.
 *
 * The streaming targets (issue #17): added per turn ≤ 5 ms p50 / ≤ 50 ms p99 at 50 runs, ≤ 20 / ≤ 100 ms
 * above that; event-loop delay p99 ≤ 25 ms; CPU per turn ≤ 1.5× the bare client's.
 *
 * `npm run bench:runs` chains three scripts, and npm appends `-- …` arguments to the last one only: pass
 * options to this script directly.
 *
 *   npm run bench:runs
 *   npx tsx bench/runs.bench.ts --rounds 100 --ns 50,150 --parked 300     quicker, noisier
 *   npx tsx bench/runs.bench.ts --only stream --ns 150 --edit-interval 1000   one scenario, Slack-like throttle
 *   npx tsx bench/runs.bench.ts --only stream --ns 150 --profile /tmp/prof   CPU profile of the measured phase
 *   RUNS_BENCH_PROFILE_DIR=/tmp/prof npm run bench:runs             whole-process CPU profiles of the children
 */
import { type ChildProcess, fork } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import http from "node:http";
import { Session } from "node:inspector/promises";
import { availableParallelism, loadavg } from "node:os";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { Queue, Worker } from "bullmq";
import type { Redis } from "ioredis";
import { z } from "zod";
import {
  type AssistantMessage,
  type AssistantMessageEventStream,
  createAssistantMessageEventStream,
  type Model,
  type StreamFn,
  type ToolCall,
} from "../src/agent/index.js";
import {
  type ChatUser,
  type IncomingMessage,
  parseThreadId,
  type ThreadRef,
  threadId,
} from "../src/chat/index.js";
import { createConvertToLlm, createOpenAIStreamFn, openAIModel } from "../src/llm/index.js";
import {
  type ChatUserMessage,
  createRunQueue,
  DEFAULT_LOOP_GUARD,
  Intake,
  queuePrefix,
  type RunQueue,
  type RunsConfig,
  type RunTool,
  runsConfig,
  startRunWorker,
  type ToolRunContext,
} from "../src/runs/index.js";
import { MemoryOutbound } from "../test/fakes/memory-outbound.js";
import { chunks, FakeOpenAIServer, type FakeReply } from "../test/fakes/openai-server.js";
import { zeroUsage } from "../test/fakes/scripted-model.js";
import { connect, deletePrefix, requireRedis } from "../test/support/redis.js";

// ---------------------------------------------------------------------------
// Settings and helpers
// ---------------------------------------------------------------------------

/** Model requests per streaming run (the last one answers without a tool call). */
const TURNS = 10;
const CHUNKS = 20;
const CHUNK_DELAY_MS = 10;
/** The model's nominal time per turn. */
const MODEL_MS = CHUNKS * CHUNK_DELAY_MS;
/** The whole bench stops (children killed, keys deleted) after this long. */
const DEADLINE_MS = 230_000;
const CHILD_DEADLINE_MS = 150_000;
const WAIT_MS = 20_000;
/**
 * Warm-up runs of a streaming worker before its RSS baseline: enough for the JIT, few enough that the heap
 * they grow does not hide the measured runs' memory (RSS rarely shrinks after a collection).
 */
const STREAM_WARMUP_RUNS = 10;

const SELF = fileURLToPath(import.meta.url);
const alice: ChatUser = { id: "U_ALICE", name: "Alice" };

const now = () => performance.now();
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] as number;
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** One-shot signals by key; `fire` before `wait` is kept until someone waits. */
class Signals<T = number> {
  private readonly fired = new Map<string, T>();
  private readonly waiting = new Map<string, (value: T) => void>();

  fire(key: string, value: T): void {
    const resolve = this.waiting.get(key);
    if (resolve) {
      this.waiting.delete(key);
      resolve(value);
    } else {
      this.fired.set(key, value);
    }
  }

  wait(key: string): Promise<T> {
    if (this.fired.has(key)) {
      const value = this.fired.get(key) as T;
      this.fired.delete(key);
      return Promise.resolve(value);
    }
    return new Promise((resolve) => this.waiting.set(key, resolve));
  }
}

function gc(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

function benchConfig(prefix: string): RunsConfig {
  // Every streaming turn calls the same no-op tool with the same arguments: the loop guard's repeat limit
  // would stop each run after its fourth turn (and the runs would not count).
  return runsConfig({
    prefix,
    budgets: { maxTurns: 1000, maxWallMs: 10 * 60_000 },
    loopGuard: { ...DEFAULT_LOOP_GUARD, maxRepeats: 0 },
  });
}

function threadRef(name: string): ThreadRef {
  return { platform: "slack", workspace: "TBENCH", channel: "CBENCH", thread: name };
}

/** A message whose id is also its thread's name (so a worker can map jobs and requests to runs). */
function chatMessage(id: string, text: string, options: { thread?: ThreadRef; mention?: boolean } = {}) {
  const message: IncomingMessage = {
    id,
    thread: options.thread ?? threadRef(id),
    author: alice,
    text,
    attachments: [],
    mentionsBot: options.mention ?? true,
    sentAt: Date.now(),
  };
  return message;
}

const okResult = { content: [{ type: "text" as const, text: "done" }], details: {} };
const toolParameters = z.object({ value: z.string().optional() });

function streamRunId(n: number, index: number): string {
  return `n${n}-${index}`;
}

function parkedRunId(index: number): string {
  return `park-${index}`;
}

/** A provider stream that answers at once (text, or one tool call). */
let instantCalls = 0;
function instantResponse(
  model: Model,
  reply: { text: string } | { tool: string },
): AssistantMessageEventStream {
  const stream = createAssistantMessageEventStream();
  const message: AssistantMessage = {
    role: "assistant",
    content: [],
    api: model.api,
    provider: model.provider,
    model: model.id,
    usage: zeroUsage(),
    stopReason: "stop",
    timestamp: Date.now(),
  };
  stream.push({ type: "start", partial: message });
  if ("text" in reply) {
    message.content.push({ type: "text", text: reply.text });
    stream.push({ type: "text_start", contentIndex: 0, partial: message });
    stream.push({ type: "text_delta", contentIndex: 0, delta: reply.text, partial: message });
    stream.push({ type: "text_end", contentIndex: 0, content: reply.text, partial: message });
    stream.push({ type: "done", reason: "stop", message });
    return stream;
  }
  const call: ToolCall = {
    type: "toolCall",
    id: `call-${++instantCalls}`,
    name: reply.tool,
    arguments: { value: "x" },
  };
  message.content.push(call);
  message.stopReason = "toolUse";
  stream.push({ type: "toolcall_start", contentIndex: 0, partial: message });
  stream.push({ type: "toolcall_delta", contentIndex: 0, delta: '{"value":"x"}', partial: message });
  stream.push({ type: "toolcall_end", contentIndex: 0, toolCall: call, partial: message });
  stream.push({ type: "done", reason: "toolUse", message });
  return stream;
}

const INSTANT_MODEL: Model = {
  id: "instant",
  name: "Instant",
  api: "instant",
  provider: "instant",
  contextWindow: 100_000,
  maxTokens: 4_096,
};

// ---------------------------------------------------------------------------
// Child protocol
// ---------------------------------------------------------------------------

type ChildMessage =
  | { type: "ready"; baseURL?: string }
  | { type: "result"; data: unknown }
  | { type: "error"; message: string };

function send(message: ChildMessage): void {
  process.send?.(message);
}

interface ChildArgs {
  prefix: string;
  baseURL: string;
  n: number;
  warm: number;
  rounds: number;
  editIntervalMs: number;
  /** Directory for a CPU profile of the measured phase of each streaming worker (`--profile`). */
  profileDir?: string;
}

type LatencyResult = Record<string, number[]>;

interface BareResult {
  intervals: number[];
  /** CPU per turn of the minimal client (request, SSE split, JSON.parse of every event). */
  cpuMicrosPerTurn: number;
}

interface StreamResult {
  n: number;
  runsOk: number;
  turns: number;
  intervals: number[];
  gaps: number[];
  modelTimes: number[];
  cpuMicros: number;
  wallMs: number;
  rampMs: number;
  rssBase: number;
  rssPeak: number;
  heapBase: number;
  heapPeak: number;
  eldP50: number;
  eldP99: number;
  eldMax: number;
  /** Event-loop stalls of 25 ms or more (a 5 ms timer that fired that late) and the time they took. */
  stalls25: number;
  stalledMs: number;
  edits: number;
  posts: number;
}

interface ParkedResult {
  n: number;
  parkMs: number;
  rssBase: number;
  rssAfter: number;
  heapBase: number;
  heapAfter: number;
  externalBase: number;
  externalAfter: number;
  resources: Record<string, number>;
}

function resourceCounts(): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const name of process.getActiveResourcesInfo()) counts[name] = (counts[name] ?? 0) + 1;
  return counts;
}

// ---------------------------------------------------------------------------
// Child: fake model server
// ---------------------------------------------------------------------------

function sse(chunk: Record<string, unknown>): string {
  return `data: ${JSON.stringify(chunk)}\n\n`;
}

/** Turn `turn` of a streaming run: 20 text chunks 10 ms apart, the last one carrying the tool call. */
function streamingReply(turn: number): FakeReply {
  const parts: string[] = [];
  for (let i = 0; i < CHUNKS; i++) parts.push(sse(chunks.text(`Word${i} `)));
  parts[0] = sse(chunks.role()) + parts[0];
  const tail =
    turn < TURNS - 1
      ? sse(chunks.toolCall(0, { id: `call_${turn}`, name: "noop", arguments: "{}" })) +
        sse(chunks.finish("tool_calls"))
      : sse(chunks.finish("stop"));
  parts[CHUNKS - 1] += tail + sse(chunks.usage(100, CHUNKS));
  return { kind: "stream", chunks: parts.map((raw) => ({ raw })), delayMs: CHUNK_DELAY_MS };
}

async function serverChild(): Promise<void> {
  const server = await FakeOpenAIServer.start();
  const turns = new Map<number, FakeReply>();
  const parkCall: FakeReply = {
    kind: "stream",
    chunks: [
      chunks.role(),
      chunks.toolCall(0, { id: "call_deploy", name: "deploy", arguments: '{"value":"prod"}' }),
      chunks.finish("tool_calls"),
      chunks.usage(50, 5),
    ],
  };
  const parkDone: FakeReply = {
    kind: "stream",
    chunks: [chunks.role(), chunks.text("deployed"), chunks.finish("stop"), chunks.usage(60, 2)],
  };
  server.handler = (request) => {
    // Keep the request log from growing for the whole run.
    server.requests.length = 0;
    const body = request.body as { model?: string; messages?: { role?: string }[] } | undefined;
    const messages = body?.messages ?? [];
    if (body?.model === "park") return messages.at(-1)?.role === "tool" ? parkDone : parkCall;
    const turn = Math.min(TURNS - 1, messages.filter((m) => m.role === "assistant").length);
    let reply = turns.get(turn);
    if (!reply) {
      reply = streamingReply(turn);
      turns.set(turn, reply);
    }
    return reply;
  };
  send({ type: "ready", baseURL: server.baseURL });
  process.on("disconnect", () => void server.close().then(() => process.exit(0)));
}

// ---------------------------------------------------------------------------
// Child: handoff latencies (gateway + worker + bare BullMQ in one process)
// ---------------------------------------------------------------------------

async function latencyChild(args: ChildArgs): Promise<void> {
  const config = benchConfig(args.prefix);
  const gatewayRedis = connect();
  const gatewayBull = connect({ blocking: true });
  const workerRedis = connect();
  const workerBull = connect({ blocking: true });
  const bareQueueConnection = connect({ blocking: true });
  const bareWorkerConnection = connect({ blocking: true });
  await requireRedis(gatewayRedis);
  const chat = new MemoryOutbound({ recordOps: false });

  const requests = new Signals(); // by the id of the last user message in the request
  const actives = new Signals(); // by thread id
  const begins = new Signals(); // by thread id
  const completions = new Signals(); // by run id
  const slowStarted = new Signals(); // by thread id
  const slowRelease = new Signals<void>();
  const deployStarted = new Signals();
  const drains = new Signals<{ start: number; end: number }>(); // by drained message id
  const cards = new Signals<string>(); // thread id → approval id
  const bareStarted = new Signals();
  const bareDone = new Signals();

  const streamFn: StreamFn = (model, context) => {
    const t = now();
    const messages = context.messages as unknown as { role: string; chatMessageId?: string }[];
    const promptId = messages[0]?.chatMessageId ?? "";
    const last = messages.at(-1);
    if (last?.role === "user" && last.chatMessageId) requests.fire(last.chatMessageId, t);
    if (last?.role === "user" && last.chatMessageId === promptId) {
      if (promptId.startsWith("steer-")) return instantResponse(model, { tool: "slow" });
      if (promptId.startsWith("approve-")) return instantResponse(model, { tool: "deploy" });
    }
    return instantResponse(model, { text: "ok" });
  };
  const tools = (ctx: ToolRunContext): RunTool[] => [
    {
      name: "slow",
      description: "Waits until the benchmark releases it.",
      parameters: toolParameters,
      execute: async () => {
        slowStarted.fire(ctx.threadId, now());
        await slowRelease.wait(ctx.threadId);
        return okResult;
      },
    },
    {
      name: "deploy",
      description: "Needs an approval.",
      parameters: toolParameters,
      approval: "ask",
      execute: async () => {
        deployStarted.fire(ctx.threadId, now());
        return okResult;
      },
    },
  ];

  const handle = await startRunWorker({
    redis: workerRedis,
    bullConnection: workerBull,
    config,
    outbound: (thread) => {
      begins.fire(threadId(thread), now());
      return chat;
    },
    agent: {
      model: INSTANT_MODEL,
      streamFn,
      convertToLlm: createConvertToLlm(),
      systemPrompt: "You are a benchmark.",
      tools,
    },
    concurrency: 16,
  });
  handle.worker.on("active", (job) => actives.fire(job.data.threadId, now()));
  handle.worker.on("completed", (job) => completions.fire(job.id ?? "", now()));
  handle.worker.on("failed", (job, err) => {
    console.error(`[latency] run failed: ${err.message}`);
    if (job?.id) completions.fire(job.id, now());
  });
  // The processor looks its scripts up on the connection at every call: observe tlDrain's replies.
  const scripted = workerRedis as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>;
  const originalDrain = scripted.tlDrain!;
  scripted.tlDrain = function (this: unknown, ...a: unknown[]) {
    const start = now();
    return originalDrain.apply(this, a).then((reply) => {
      const end = now();
      if (Array.isArray(reply) && typeof reply[0] === "string") drains.fire(reply[0], { start, end });
      return reply;
    });
  };
  chat.subscribe((op) => {
    if (op.op === "postApproval" && op.card) cards.fire(op.thread, op.card.approvalId);
  });
  const intake = new Intake(gatewayRedis, createRunQueue(gatewayBull, args.prefix), config);

  const bareQueue = new Queue<{ key: string }>("bare", {
    connection: bareQueueConnection,
    prefix: queuePrefix(args.prefix),
    defaultJobOptions: { removeOnComplete: { count: 1000 }, removeOnFail: { age: 3600 } },
  });
  const bareWorker = new Worker<{ key: string }>(
    "bare",
    async (job) => {
      bareStarted.fire(job.data.key, now());
    },
    {
      connection: bareWorkerConnection,
      prefix: queuePrefix(args.prefix),
      concurrency: 16,
      lockDuration: 30_000,
      stalledInterval: 15_000,
      maxStalledCount: 5,
    },
  );
  bareWorker.on("completed", (job) => bareDone.fire(job.data.key, now()));
  await bareWorker.waitUntilReady();

  const samples: LatencyResult = {};
  let recording = false;
  const add = (key: string, value: number) => {
    if (!recording) return;
    const list = samples[key] ?? [];
    list.push(value);
    samples[key] = list;
  };
  let seq = 0;
  /** After each run: its job completed, then a moment for the worker to block on the queue again. */
  const settle = async (runId: string) => {
    await withTimeout(completions.wait(runId), WAIT_MS, `run ${runId} to complete`);
    await sleep(2);
  };

  /**
   * The floor under the same conditions as the handoffs (each of which starts after the process waited
   * for something): one PING after a 2 ms pause, three times; then a few back-to-back ones for reference.
   */
  const ping = async () => {
    for (let i = 0; i < 3; i++) {
      await sleep(2);
      const t0 = now();
      await gatewayRedis.ping();
      add("ping", now() - t0);
    }
    for (let i = 0; i < 3; i++) {
      const t0 = now();
      await gatewayRedis.ping();
      add("pingHot", now() - t0);
    }
  };

  const bare = async () => {
    const key = `bare-${seq++}`;
    const t0 = now();
    await bareQueue.add("bare", { key });
    add("bareAdd", now() - t0);
    add("barePickup", (await withTimeout(bareStarted.wait(key), WAIT_MS, key)) - t0);
    await withTimeout(bareDone.wait(key), WAIT_MS, `${key} done`);
    await sleep(2);
  };

  const start = async () => {
    const id = `start-${seq++}`;
    const tid = threadId(threadRef(id));
    const t0 = now();
    const result = await intake.submit(chatMessage(id, "say ok"));
    const t1 = now();
    if (result.kind !== "started") throw new Error(`submit: expected started, got ${result.kind}`);
    add("startSubmit", t1 - t0);
    add("startActive", (await withTimeout(actives.wait(tid), WAIT_MS, `${id} active`)) - t0);
    add("startBegin", (await withTimeout(begins.wait(tid), WAIT_MS, `${id} begin`)) - t0);
    add("startRequest", (await withTimeout(requests.wait(id), WAIT_MS, `${id} request`)) - t0);
    await settle(result.runId);
  };

  const steer = async () => {
    const id = `steer-${seq++}`;
    const thread = threadRef(id);
    const tid = threadId(thread);
    const run = await intake.submit(chatMessage(id, "run the slow tool"));
    if (run.kind !== "started") throw new Error(`steer run: expected started, got ${run.kind}`);
    await withTimeout(slowStarted.wait(tid), WAIT_MS, `${id} tool start`);
    const steerId = `${id}-steer`;
    const t0 = now();
    const queued = await intake.submit(chatMessage(steerId, "use blue instead", { thread, mention: false }));
    const t1 = now();
    if (queued.kind !== "queued") throw new Error(`steering: expected queued, got ${queued.kind}`);
    slowRelease.fire(tid, undefined);
    const drain = await withTimeout(drains.wait(steerId), WAIT_MS, `${steerId} drain`);
    const request = await withTimeout(requests.wait(steerId), WAIT_MS, `${steerId} request`);
    add("steerSubmit", t1 - t0);
    add("steerDrain", drain.end - drain.start);
    add("steerHandoff", t1 - t0 + (drain.end - drain.start));
    add("steerReleaseToDrain", drain.start - t1);
    add("steerDrainToRequest", request - drain.end);
    add("steerEndToEnd", request - t0);
    await settle(run.runId);
  };

  const approve = async () => {
    const id = `approve-${seq++}`;
    const thread = threadRef(id);
    const tid = threadId(thread);
    const run = await intake.submit(chatMessage(id, "deploy it"));
    if (run.kind !== "started") throw new Error(`approval run: expected started, got ${run.kind}`);
    const approvalId = await withTimeout(cards.wait(tid), WAIT_MS, `${id} card`);
    // The gate stores the card id, then waits: give it that moment.
    await sleep(2);
    const t0 = now();
    const decision = await intake.decide(thread, approvalId, alice, "approve");
    const t1 = now();
    if (decision.kind !== "accepted") throw new Error(`decide: expected accepted, got ${decision.kind}`);
    const executed = await withTimeout(deployStarted.wait(tid), WAIT_MS, `${id} execute`);
    add("approveDecide", t1 - t0);
    add("approveToExecute", executed - t0);
    await settle(run.runId);
  };

  const steps = [ping, bare, start, steer, approve];
  const warmup = Math.max(10, Math.round(args.rounds / 10));
  for (let round = -warmup; round < args.rounds; round++) {
    recording = round >= 0;
    const offset = (((round % steps.length) + steps.length) % steps.length) as number;
    for (let i = 0; i < steps.length; i++) await steps[(i + offset) % steps.length]!();
  }
  send({ type: "result", data: samples });

  await handle.close();
  await bareWorker.close();
  await bareQueue.close();
  for (const connection of [gatewayRedis, gatewayBull, workerRedis, workerBull]) connection.disconnect();
  for (const connection of [bareQueueConnection, bareWorkerConnection]) connection.disconnect();
}

// ---------------------------------------------------------------------------
// Child: the model alone (bare node:http loops)
// ---------------------------------------------------------------------------

async function bareChild(args: ChildArgs): Promise<void> {
  const agent = new http.Agent({ keepAlive: true });
  const url = new URL(`${args.baseURL}/chat/completions`);
  const request = (turn: number) =>
    new Promise<void>((resolve, reject) => {
      const messages = [{ role: "user", content: "go" }];
      for (let i = 0; i < turn; i++) messages.push({ role: "assistant", content: "x" });
      const body = JSON.stringify({ model: "stream", stream: true, messages });
      const req = http.request(
        {
          host: url.hostname,
          port: url.port,
          path: url.pathname,
          method: "POST",
          agent,
          headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
        },
        (res) => {
          // A minimal client: split SSE events and parse each one (what any consumer must do).
          let buffered = "";
          res.setEncoding("utf8");
          res.on("data", (text: string) => {
            buffered += text;
            let end = buffered.indexOf("\n\n");
            while (end >= 0) {
              const event = buffered.slice(0, end);
              buffered = buffered.slice(end + 2);
              if (event.startsWith("data: {")) JSON.parse(event.slice(6));
              end = buffered.indexOf("\n\n");
            }
          });
          res.on("end", () => resolve());
          res.on("error", reject);
        },
      );
      req.on("error", reject);
      req.end(body);
    });
  const loop = async (turns: number, starts: number[]) => {
    for (let turn = 0; turn < turns; turn++) {
      starts.push(now());
      await request(turn);
    }
  };
  await Promise.all(Array.from({ length: Math.min(args.n, 50) }, () => loop(2, [])));
  const runs = Array.from({ length: args.n }, () => [] as number[]);
  const cpu0 = process.cpuUsage();
  await Promise.all(runs.map((starts) => loop(TURNS, starts)));
  const cpu = process.cpuUsage(cpu0);
  const intervals: number[] = [];
  for (const starts of runs)
    for (let k = 0; k + 1 < starts.length; k++) intervals.push(starts[k + 1]! - starts[k]!);
  const cpuMicrosPerTurn = (cpu.user + cpu.system) / (args.n * TURNS);
  send({ type: "result", data: { intervals, cpuMicrosPerTurn } satisfies BareResult });
  agent.destroy();
}

// ---------------------------------------------------------------------------
// Child: one worker streaming N runs
// ---------------------------------------------------------------------------

function noopTool(): RunTool {
  return {
    name: "noop",
    description: "Does nothing.",
    parameters: z.object({}),
    execute: async () => okResult,
  };
}

async function streamChild(args: ChildArgs): Promise<void> {
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
  const completions = new Signals();
  const handle = await startRunWorker({
    redis,
    bullConnection: bull,
    config,
    outbound: () => chat,
    agent: {
      model: openAIModel({ id: "stream", baseUrl: args.baseURL }),
      streamFn,
      convertToLlm: createConvertToLlm(),
      systemPrompt: "You are a benchmark.",
      tools: [noopTool()],
    },
    concurrency: Math.max(args.n, args.warm),
  });
  handle.worker.on("completed", (job) => completions.fire(parseThreadId(job.data.threadId).thread, now()));
  handle.worker.on("failed", (job, err) => {
    console.error(`[stream] run failed: ${err.message}`);
    if (job) completions.fire(parseThreadId(job.data.threadId).thread, now());
  });

  // Warm-up with a gateway of its own, then the baseline.
  const warmBull = connect({ blocking: true });
  const warmIntake = new Intake(redis, createRunQueue(warmBull, args.prefix), config);
  const warmIds = Array.from({ length: args.warm }, (_, i) => `w${args.n}-${i}`);
  await Promise.all(warmIds.map((id) => warmIntake.submit(chatMessage(id, "go"))));
  await withTimeout(Promise.all(warmIds.map((id) => completions.wait(id))), 60_000, "warm-up runs");
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
  const ids = Array.from({ length: args.n }, (_, i) => streamRunId(args.n, i));
  const done = Promise.all(ids.map((id) => completions.wait(id)));
  const profiler = args.profileDir ? await startProfile() : undefined;
  eld.enable();
  stalls.start();
  const cpu0 = process.cpuUsage();
  const t0 = now();
  send({ type: "ready" });
  await withTimeout(done, 90_000, `${args.n} streaming runs`);
  const cpu = process.cpuUsage(cpu0);
  const wallMs = now() - t0;
  eld.disable();
  stalls.stop();
  clearInterval(sampler);
  if (profiler && args.profileDir) await profiler.stop(`${args.profileDir}/stream-n${args.n}.cpuprofile`);

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
  send({ type: "result", data: result });
  await handle.close();
  for (const connection of [redis, bull, warmBull]) connection.disconnect();
}

/** Counts event-loop stalls ≥ 25 ms: a 5 ms interval timer that fires late by that much. */
function stallCounter() {
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

/** A CPU profile of this process from now until `stop` (the measured phase only, not start-up). */
async function startProfile() {
  const session = new Session();
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Profiler.setSamplingInterval", { interval: 250 });
  await session.post("Profiler.start");
  return {
    async stop(file: string) {
      const { profile } = await session.post("Profiler.stop");
      writeFileSync(file, JSON.stringify(profile));
      session.disconnect();
      process.stderr.write(`[stream] CPU profile of the measured phase: ${file}\n`);
    },
  };
}

// ---------------------------------------------------------------------------
// Child: runs parked on approval waits
// ---------------------------------------------------------------------------

async function parkedChild(args: ChildArgs): Promise<void> {
  const config = benchConfig(args.prefix);
  const redis = connect();
  const bull = connect({ blocking: true });
  await requireRedis(redis);
  const chat = new MemoryOutbound({ recordOps: false });
  const cards = new Signals<string>(); // thread name → approval id
  const completions = new Signals();
  chat.subscribe((op) => {
    if (op.op === "postApproval" && op.card) cards.fire(parseThreadId(op.thread).thread, op.card.approvalId);
  });
  const deploy: RunTool = {
    name: "deploy",
    description: "Needs an approval.",
    parameters: toolParameters,
    approval: "ask",
    execute: async () => okResult,
  };
  const handle = await startRunWorker({
    redis,
    bullConnection: bull,
    config,
    outbound: () => chat,
    agent: {
      model: openAIModel({ id: "park", baseUrl: args.baseURL }),
      streamFn: createOpenAIStreamFn({ apiKey: "sk-bench", maxRetries: 0 }),
      convertToLlm: createConvertToLlm(),
      systemPrompt: "You are a benchmark.",
      tools: [deploy],
    },
    concurrency: args.n + args.warm,
  });
  handle.worker.on("completed", (job) => completions.fire(parseThreadId(job.data.threadId).thread, now()));

  // Warm-up: park, approve and finish some runs (JIT, pools, Redis scripts), then the baseline.
  const warmBull = connect({ blocking: true });
  const warmIntake = new Intake(redis, createRunQueue(warmBull, args.prefix), config);
  const warmIds = Array.from({ length: args.warm }, (_, i) => `pw-${i}`);
  await Promise.all(warmIds.map((id) => warmIntake.submit(chatMessage(id, "deploy"))));
  for (const id of warmIds) {
    const approvalId = await withTimeout(cards.wait(id), WAIT_MS, `${id} card`);
    await warmIntake.decide(threadRef(id), approvalId, alice, "approve");
  }
  await withTimeout(Promise.all(warmIds.map((id) => completions.wait(id))), 60_000, "warm-up runs");
  await sleep(300);
  gc();
  await sleep(100);
  gc();
  const base = process.memoryUsage();
  const resourcesBase = resourceCounts();
  const ids = Array.from({ length: args.n }, (_, i) => parkedRunId(i));
  const parked = Promise.all(ids.map((id) => cards.wait(id)));
  const t0 = now();
  send({ type: "ready" });
  await withTimeout(parked, 90_000, `${args.n} approval cards`);
  const parkMs = now() - t0;
  await sleep(300);
  gc();
  await sleep(100);
  gc();
  const after = process.memoryUsage();
  const resources = resourceCounts();
  for (const [name, count] of Object.entries(resourcesBase)) resources[name] = (resources[name] ?? 0) - count;
  const result: ParkedResult = {
    n: args.n,
    parkMs,
    rssBase: base.rss,
    rssAfter: after.rss,
    heapBase: base.heapUsed,
    heapAfter: after.heapUsed,
    externalBase: base.external + base.arrayBuffers,
    externalAfter: after.external + after.arrayBuffers,
    resources,
  };
  send({ type: "result", data: result });
  // The parked runs never finish: stop without waiting for them (the keys are deleted by the parent).
  await handle.close(true);
  for (const connection of [redis, bull, warmBull]) connection.disconnect();
}

async function runChild(kind: string, args: ChildArgs): Promise<void> {
  if (kind !== "server") {
    process.on("disconnect", () => process.exit(0));
    setTimeout(() => {
      console.error(`[${kind}] child deadline reached; exiting`);
      process.exit(3);
    }, CHILD_DEADLINE_MS).unref();
  }
  try {
    if (kind === "server") return await serverChild();
    if (kind === "latency") await latencyChild(args);
    else if (kind === "bare") await bareChild(args);
    else if (kind === "stream") await streamChild(args);
    else if (kind === "parked") await parkedChild(args);
    else throw new Error(`unknown child kind ${kind}`);
  } catch (err) {
    send({ type: "error", message: err instanceof Error ? (err.stack ?? err.message) : String(err) });
    process.exitCode = 1;
  }
  // Let the IPC message flush, then leave (also when some handle would keep the loop alive).
  setTimeout(() => process.exit(), 50);
}

// ---------------------------------------------------------------------------
// Parent
// ---------------------------------------------------------------------------

class Child {
  readonly process: ChildProcess;
  private readonly inbox: ChildMessage[] = [];
  private waiter: (() => void) | undefined;
  private exitCode: number | null | undefined;

  constructor(
    readonly kind: string,
    args: Partial<ChildArgs>,
  ) {
    const execArgv = [...process.execArgv, "--expose-gc"];
    const profileDir = process.env.RUNS_BENCH_PROFILE_DIR;
    if (profileDir && kind !== "server") execArgv.push("--cpu-prof", `--cpu-prof-dir=${profileDir}`);
    this.process = fork(SELF, ["--child", kind, JSON.stringify(args)], { execArgv });
    this.process.on("message", (message) => {
      this.inbox.push(message as ChildMessage);
      this.waiter?.();
    });
    this.process.once("exit", (code) => {
      this.exitCode = code;
      this.waiter?.();
    });
  }

  get running(): boolean {
    return this.exitCode === undefined;
  }

  /** The next message of `type`; throws on a child error, exit or timeout. */
  async next<T extends ChildMessage["type"]>(
    type: T,
    timeoutMs: number,
  ): Promise<Extract<ChildMessage, { type: T }>> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const message = this.inbox.shift();
      if (message?.type === "error") throw new Error(`${this.kind} child failed: ${message.message}`);
      if (message?.type === type) return message as Extract<ChildMessage, { type: T }>;
      if (message) continue;
      if (!this.running) throw new Error(`${this.kind} child exited (${this.exitCode}) before "${type}"`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`${this.kind} child: no "${type}" within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiter = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.waiter = undefined;
    }
  }

  async result<T>(timeoutMs: number): Promise<T> {
    return (await this.next("result", timeoutMs)).data as T;
  }

  /** Waits for the child to exit (killing it after `graceMs`). */
  async stop(graceMs = 5_000): Promise<void> {
    if (!this.running) return;
    const exited = new Promise<void>((resolve) => this.process.once("exit", () => resolve()));
    if (this.process.connected) this.process.disconnect();
    const timer = setTimeout(() => this.process.kill("SIGKILL"), graceMs);
    await exited;
    clearTimeout(timer);
  }
}

interface Options {
  rounds: number;
  ns: number[];
  parked: number;
  /** MemoryOutbound's `minEditIntervalMs` in the streaming scenario (its default is 0). */
  editIntervalMs: number;
  only: string[];
  /** `--profile <dir>`: a CPU profile of each streaming worker's measured phase. */
  profileDir: string | undefined;
}

function parseOptions(argv: string[]): Options {
  const value = (name: string) => {
    const index = argv.indexOf(name);
    return index >= 0 ? argv[index + 1] : undefined;
  };
  return {
    rounds: Number(value("--rounds") ?? 300),
    ns: (value("--ns") ?? "50,150,300").split(",").map(Number),
    parked: Number(value("--parked") ?? 1000),
    editIntervalMs: Number(value("--edit-interval") ?? 0),
    only: (value("--only") ?? "latency,stream,parked").split(","),
    profileDir: value("--profile"),
  };
}

async function countKeys(redis: Redis, prefix: string): Promise<number> {
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

const ms = (value: number) =>
  Number.isNaN(value) ? "–" : value < 10 ? `${value.toFixed(3)} ms` : `${value.toFixed(1)} ms`;
const kib = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;
const ratio = (value: number) => `${value.toFixed(2)}×`;
const verdict = (ok: boolean) => (ok ? "PASS" : "FAIL");

/**
 * Issue #17's streaming targets, against the bare client at the same N: at 50 runs added ≤ 5 ms p50 /
 * ≤ 50 ms p99; at 300 runs (and applied to every N above 50) ≤ 20 ms / ≤ 100 ms. At every N: event-loop
 * delay p99 ≤ 25 ms and CPU per turn ≤ 1.5× the bare client's.
 */
function streamTarget(n: number): { p50: number; p99: number } {
  return n <= 50 ? { p50: 5, p99: 50 } : { p50: 20, p99: 100 };
}
const STREAM_ELD_P99_MS = 25;
const STREAM_CPU_RATIO = 1.5;

interface Results {
  latency?: LatencyResult;
  streams: { n: number; bare: BareResult; run: StreamResult }[];
  parked?: ParkedResult;
}

async function main(): Promise<void> {
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
    const child = new Child(kind, args);
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

function report(
  results: Results,
  options: Options,
  seconds: number,
  keysLeft: number,
  redisVersion: string,
): void {
  const verdicts: string[] = [];
  console.log(
    `node ${process.version}, Redis ${redisVersion}, ${availableParallelism()} CPUs, load ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}; ${seconds.toFixed(0)} s; Redis keys left under the bench prefix: ${keysLeft}\n`,
  );

  const lat = results.latency;
  if (lat) {
    const p = (key: string, q: number) => quantile(lat[key] ?? [], q);
    const ping50 = p("ping", 0.5);
    const bare50 = p("barePickup", 0.5);
    const samples = (lat.startRequest ?? []).length;
    console.log(
      `### Handoffs (${samples} samples each, PING ×3 per round; gateway, worker and bare BullMQ in one process; instant in-process model)\n`,
    );
    console.log("| handoff | p50 | p99 | p50 ÷ PING p50 | p50 − bare pickup p50 | target | result |");
    console.log("| --- | --- | --- | --- | --- | --- | --- |");
    const row = (label: string, key: string, target = "", result = "") => {
      const p50 = p(key, 0.5);
      const p99 = p(key, 0.99);
      console.log(
        `| ${label} | ${ms(p50)} | ${ms(p99)} | ${ratio(p50 / ping50)} | ${ms(p50 - bare50)} | ${target} | ${result} |`,
      );
    };
    row("Redis PING round trip after a 2 ms pause (ioredis; the floor)", "ping");
    row("Redis PING, back-to-back (reference)", "pingHot");
    row("BullMQ: `queue.add` round trip", "bareAdd");
    row("BullMQ bare pickup: `queue.add` → processor starts", "barePickup");
    row("`Intake.submit` round trip (tlSubmit + queue.add)", "startSubmit");
    row("`Intake.submit` → BullMQ `active`", "startActive");
    row("`Intake.submit` → run processor begins", "startBegin");
    const start50 = p("startRequest", 0.5);
    const startOk = start50 <= bare50 + 1;
    row(
      "`Intake.submit` → run starts (model request)",
      "startRequest",
      `p50 ≤ bare pickup + 1 ms = ${ms(bare50 + 1)}`,
      verdict(startOk),
    );
    verdicts.push(
      `${verdict(startOk)}  submit → start p50 ${ms(start50)} vs ≤ bare pickup + 1 ms (${ms(bare50 + 1)}); processor begins at p50 ${ms(p("startBegin", 0.5))} (${verdict(p("startBegin", 0.5) <= bare50 + 1)} if that were the start)`,
    );
    const steer50 = p("steerHandoff", 0.5);
    const steer99 = p("steerHandoff", 0.99);
    const steerOk = steer50 <= 3 * ping50 && steer99 <= 5;
    row("steering: tlSubmit round trip (gateway)", "steerSubmit");
    row("steering: the tlDrain call that returned it (worker)", "steerDrain");
    row(
      "**steering handoff** = submit + drain",
      "steerHandoff",
      `p50 ≤ 3× PING = ${ms(3 * ping50)}, p99 ≤ 5 ms`,
      verdict(steerOk),
    );
    verdicts.push(
      `${verdict(steerOk)}  steering handoff p50 ${ms(steer50)} (≤ ${ms(3 * ping50)}), p99 ${ms(steer99)} (≤ 5 ms)`,
    );
    row("steering: tool released → tlDrain issued (tool result persisted, turn end)", "steerReleaseToDrain");
    row("steering: drain returned → model request containing it", "steerDrainToRequest");
    row("steering: submit → model request (tool released at submit return)", "steerEndToEnd");
    const approve50 = p("approveToExecute", 0.5);
    const approve99 = p("approveToExecute", 0.99);
    const approveOk = approve50 <= 3 * ping50 && approve99 <= 5;
    row("approval: `Intake.decide` round trip", "approveDecide");
    row(
      "**approval**: `Intake.decide` → tool `execute` starts",
      "approveToExecute",
      `p50 ≤ 3× PING = ${ms(3 * ping50)}, p99 ≤ 5 ms`,
      verdict(approveOk),
    );
    verdicts.push(
      `${verdict(approveOk)}  approval decide → execute p50 ${ms(approve50)} (≤ ${ms(3 * ping50)}), p99 ${ms(approve99)} (≤ 5 ms)`,
    );
    console.log("");
  }

  if (results.streams.length > 0) {
    console.log(
      `### Streaming runs in one worker (${TURNS} turns per run; every answer 20 chunks over ${MODEL_MS} ms; model server in its own process; MemoryOutbound minEditIntervalMs ${options.editIntervalMs})\n`,
    );
    console.log(
      "| N | turn p50 / p99 | model alone, same N (bare client) p50 / p99 | turn ÷ model alone (p50) | **added** p50 / p99 | turn − 200 ms p50 / p99 | between turns p50 / p99 | CPU per turn (bare client's, ratio) | peak RSS per run | peak heap per run | loop delay p99 / max | target | result |",
    );
    console.log("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    for (const { n, bare, run } of results.streams) {
      const turn50 = quantile(run.intervals, 0.5);
      const turn99 = quantile(run.intervals, 0.99);
      const model50 = quantile(bare.intervals, 0.5);
      const model99 = quantile(bare.intervals, 0.99);
      const added50 = turn50 - model50;
      const added99 = turn99 - model99;
      const cpuPerTurn = run.cpuMicros / 1000 / Math.max(1, run.turns);
      const cpuRatio = (cpuPerTurn * 1000) / bare.cpuMicrosPerTurn;
      const target = streamTarget(n);
      const complete = run.runsOk === n;
      const addedOk = complete && added50 <= target.p50 && added99 <= target.p99;
      const eldOk = run.eldP99 <= STREAM_ELD_P99_MS;
      const cpuOk = cpuRatio <= STREAM_CPU_RATIO;
      const ok = addedOk && eldOk && cpuOk;
      const nominalOk = complete && turn50 - MODEL_MS <= target.p50 && turn99 - MODEL_MS <= target.p99;
      console.log(
        `| ${n}${complete ? "" : ` (${run.runsOk} ok)`} | ${ms(turn50)} / ${ms(turn99)} | ${ms(model50)} / ${ms(model99)} | ${ratio(turn50 / model50)} | ${ms(added50)} / ${ms(added99)} | ${ms(turn50 - MODEL_MS)} / ${ms(turn99 - MODEL_MS)} | ${ms(quantile(run.gaps, 0.5))} / ${ms(quantile(run.gaps, 0.99))} | ${ms(cpuPerTurn)} (${ms(bare.cpuMicrosPerTurn / 1000)}, ${ratio(cpuRatio)}) | ${kib((run.rssPeak - run.rssBase) / n)} | ${kib((run.heapPeak - run.heapBase) / n)} | ${ms(run.eldP99)} / ${ms(run.eldMax)} (${run.stalls25} stalls ≥ 25 ms, ${ms(run.stalledMs)}) | added ≤ ${target.p50} ms p50, ≤ ${target.p99} ms p99; loop delay p99 ≤ ${STREAM_ELD_P99_MS} ms; CPU ≤ ${STREAM_CPU_RATIO}× | ${verdict(ok)} (vs 200 ms: ${verdict(nominalOk)}) |`,
      );
      verdicts.push(
        `${verdict(addedOk)}  ${n} streaming runs: added per turn p50 ${ms(added50)} / p99 ${ms(added99)} beyond the model alone at the same N (≤ ${target.p50} / ≤ ${target.p99} ms; literal turn − 200 ms: p50 ${ms(turn50 - MODEL_MS)} / p99 ${ms(turn99 - MODEL_MS)}, ${verdict(nominalOk)})`,
        `${verdict(eldOk)}  ${n} streaming runs: event-loop delay p99 ${ms(run.eldP99)} (≤ ${STREAM_ELD_P99_MS} ms)`,
        `${verdict(cpuOk)}  ${n} streaming runs: CPU ${ms(cpuPerTurn)} per turn, ${ratio(cpuRatio)} the bare client's ${ms(bare.cpuMicrosPerTurn / 1000)} (≤ ${STREAM_CPU_RATIO}×)`,
      );
    }
    console.log("");
    console.log(
      "| N | worker CPU total | wall | CPU share of one core | runs reaching their first request within | client-observed model time p50 / p99 | chat posts / edits |",
    );
    console.log("| --- | --- | --- | --- | --- | --- | --- |");
    for (const { n, run } of results.streams) {
      console.log(
        `| ${n} | ${(run.cpuMicros / 1e6).toFixed(2)} s | ${(run.wallMs / 1000).toFixed(2)} s | ${((run.cpuMicros / 1000 / run.wallMs) * 100).toFixed(0)} % | ${ms(run.rampMs)} | ${ms(quantile(run.modelTimes, 0.5))} / ${ms(quantile(run.modelTimes, 0.99))} | ${run.posts} / ${run.edits} |`,
      );
    }
    console.log("");
  }

  const parked = results.parked;
  if (parked) {
    const rssPer = (parked.rssAfter - parked.rssBase) / parked.n;
    const ok = rssPer <= 100 * 1024;
    console.log(`### Runs parked on approval waits in one worker\n`);
    console.log(
      "| runs | time until every card was posted | RSS per waiting run | heap per waiting run | external + array buffers per run | new handles (per run) | target | result |",
    );
    console.log("| --- | --- | --- | --- | --- | --- | --- | --- |");
    const handles = Object.entries(parked.resources)
      .filter(([, count]) => count !== 0)
      .map(([name, count]) => `${name} ${count} (${(count / parked.n).toFixed(2)})`)
      .join(", ");
    console.log(
      `| ${parked.n} | ${ms(parked.parkMs)} | ${kib(rssPer)} | ${kib((parked.heapAfter - parked.heapBase) / parked.n)} | ${kib((parked.externalAfter - parked.externalBase) / parked.n)} | ${handles || "–"} | ≤ 100 KiB RSS | ${verdict(ok)} |`,
    );
    verdicts.push(
      `${verdict(ok)}  ${parked.n} runs parked on approvals: ${kib(rssPer)} RSS per waiting run (≤ 100 KiB)`,
    );
    console.log("");
  }

  console.log(`### Verdicts (${options.rounds} handoff rounds)\n`);
  for (const line of verdicts) console.log(`- ${line}`);
}

const childIndex = process.argv.indexOf("--child");
if (childIndex >= 0) {
  const kind = process.argv[childIndex + 1] ?? "";
  await runChild(kind, JSON.parse(process.argv[childIndex + 2] ?? "{}") as ChildArgs);
} else {
  await main();
}
