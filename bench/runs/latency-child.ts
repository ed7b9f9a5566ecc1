/** Child `latency`: handoff latencies (gateway + worker + bare BullMQ in one process). */
import { Queue, Worker } from "bullmq";
import type { StreamFn } from "../../src/agent/index.js";
import { threadId } from "../../src/chat/index.js";
import { createConvertToLlm } from "../../src/llm/index.js";
import {
  createRunQueue,
  Intake,
  queuePrefix,
  type RunTool,
  startRunWorker,
  type ToolRunContext,
} from "../../src/runs/index.js";
import { MemoryOutbound } from "../../test/fakes/memory-outbound.js";
import { connect, requireRedis } from "../../test/support/redis.js";
import { sendToParent } from "../support/child.js";
import type { ChildArgs, LatencyResult } from "./protocol.js";
import {
  alice,
  approvalCards,
  benchConfig,
  chatMessage,
  deployTool,
  INSTANT_MODEL,
  instantResponse,
  now,
  okResult,
  Signals,
  sleep,
  threadRef,
  toolParameters,
  WAIT_MS,
  withTimeout,
} from "./settings.js";

export async function latencyChild(args: ChildArgs): Promise<void> {
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
  const cards = approvalCards(chat); // by thread id
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
    deployTool(() => deployStarted.fire(ctx.threadId, now())),
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
      // {'ok', {id1, body1, receivedAt1, …}, waiting, by}: the first drained message's id.
      const drained = Array.isArray(reply) && reply[0] === "ok" ? reply[1] : undefined;
      if (Array.isArray(drained) && typeof drained[0] === "string") drains.fire(drained[0], { start, end });
      return reply;
    });
  };
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
  sendToParent({ type: "result", data: samples });

  await handle.close();
  await bareWorker.close();
  await bareQueue.close();
  for (const connection of [gatewayRedis, gatewayBull, workerRedis, workerBull]) connection.disconnect();
  for (const connection of [bareQueueConnection, bareWorkerConnection]) connection.disconnect();
}
