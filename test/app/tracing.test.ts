import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { PassThrough } from "node:stream";
import { pathToFileURL } from "node:url";
import { context, createContextKey, ROOT_CONTEXT } from "@opentelemetry/api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../src/app/logger.js";
import { startTracing, type Tracing } from "../../src/app/tracing.js";
import type { ApprovalCard } from "../../src/chat/index.js";
import { createGateway, createRunQueue, Intake, runsConfig } from "../../src/runs/index.js";
import { traceIntake } from "../../src/runs/tracing.js";
import { MemoryOutbound } from "../fakes/memory-outbound.js";
import { OtlpReceiver, type ReceivedSpan } from "../fakes/otlp-receiver.js";
import { alice, instantTool, RunsHarness } from "../runs/harness.js";
import { connect, deletePrefix, requireRedis, uniquePrefix } from "../support/redis.js";

const ROOT = resolve(import.meta.dirname, "../..");

let receiver: OtlpReceiver;
let endpoint: string;
let tracing: Tracing | undefined;

beforeAll(async () => {
  receiver = new OtlpReceiver();
  endpoint = await receiver.start();
  tracing = await startTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint }, "threadline-test");
});

afterAll(async () => {
  await tracing?.shutdown();
  await receiver.close();
});

function one(spans: ReceivedSpan[], name: string): ReceivedSpan {
  const found = spans.filter((span) => span.name === name);
  expect(found, name).toHaveLength(1);
  return found[0]!;
}

function childrenOf(spans: ReceivedSpan[], parent: ReceivedSpan): ReceivedSpan[] {
  return spans.filter((span) => span.parentSpanId === parent.spanId);
}

describe("traces", () => {
  it("starts the SDK without a context manager (no AsyncLocalStorage promise hooks): parents are passed explicitly", () => {
    expect(tracing).toBeDefined();
    const marked = ROOT_CONTEXT.setValue(createContextKey("threadline.test"), 1);
    expect(context.with(marked, () => context.active())).toBe(ROOT_CONTEXT);
  });

  it("exports one run as gateway enqueue → run → turns → model request / tool call → approval wait, chat posts inside; log lines carry the ids", async () => {
    expect(tracing).toBeDefined();
    const lines: Record<string, unknown>[] = [];
    const stream = new PassThrough();
    stream.on("data", (chunk: Buffer) => {
      for (const line of chunk.toString("utf8").split("\n").filter(Boolean)) lines.push(JSON.parse(line));
    });
    const deploy = instantTool("deploy", "ask");
    const h = await new RunsHarness({
      tools: [deploy.tool],
      log: createLogger("info", {}, stream),
      script: [
        {
          toolCalls: [{ id: "d1", name: "deploy", arguments: { value: "prod" } }],
          usage: { input: 120, output: 30, cacheRead: 40 },
        },
        { text: "Deployed.", usage: { input: 200, output: 10 } },
      ],
    }).start();
    try {
      const thread = h.thread();
      const runId = await h.mention(thread, "deploy it", alice);
      await h.chat.waitFor((chat) => chat.ops.some((op) => op.op === "postApproval"));
      const card = h.chat.ops.find((op) => op.op === "postApproval")!.card as ApprovalCard;
      await h.intake.decide(thread, card.approvalId, alice, "approve");
      await h.runFinished(runId);
    } finally {
      await h.close();
    }
    await tracing!.flush();

    const enqueue = one(receiver.spans, "run.enqueue");
    const trace = receiver.spans.filter((span) => span.traceId === enqueue.traceId);
    // The worker's run joined the gateway's trace through the job data in Redis.
    const run = one(trace, "run");
    expect(run.parentSpanId).toBe(enqueue.spanId);
    expect(run.attributes).toMatchObject({
      "threadline.outcome": "completed",
      "threadline.turns": 2,
      "threadline.tool_calls": 1,
      "gen_ai.usage.input_tokens": 320,
      "gen_ai.usage.output_tokens": 40,
    });
    const turns = childrenOf(trace, run).filter((span) => span.name === "turn");
    expect(turns).toHaveLength(2);
    const [first, second] = turns as [ReceivedSpan, ReceivedSpan];
    const firstModel = one(childrenOf(trace, first), "model.request");
    expect(firstModel.attributes).toMatchObject({
      "gen_ai.usage.input_tokens": 120,
      "gen_ai.usage.output_tokens": 30,
      "gen_ai.usage.cache_read_tokens": 40,
      "threadline.stop_reason": "toolUse",
    });
    expect(firstModel.attributes["threadline.time_to_first_token_ms"]).toEqual(expect.any(Number));
    const tool = one(childrenOf(trace, first), "tool deploy");
    expect(tool.attributes).toMatchObject({ "gen_ai.tool.name": "deploy", "gen_ai.tool.call.id": "d1" });
    const underTool = childrenOf(trace, tool).map((span) => span.name);
    expect(underTool).toContain("approval.wait");
    expect(underTool).toContain("chat.postApproval");
    expect(one(trace, "approval.wait").attributes).toMatchObject({
      "threadline.approval.verdict": "approved",
    });
    expect(one(childrenOf(trace, second), "model.request").attributes).toMatchObject({
      "gen_ai.usage.input_tokens": 200,
      "threadline.stop_reason": "stop",
    });
    // The reply's post is a span of the turn that wrote it; its streaming edits are counted on the turn, and
    // are one `chat.stream` span per message and turn, under that turn, counting the same edits.
    const posts = trace.filter((span) => span.name === "chat.post");
    expect(posts.length).toBeGreaterThan(0);
    for (const post of posts) expect(turns.map((turn) => turn.spanId)).toContain(post.parentSpanId);
    const edits = turns.map((turn) => Number(turn.attributes["threadline.chat.edits"] ?? 0));
    expect(edits.reduce((sum, n) => sum + n, 0)).toBeGreaterThan(0);
    const streams = trace.filter((span) => span.name === "chat.stream");
    expect(streams.length).toBeGreaterThan(0);
    for (const stream of streams) {
      expect(turns.map((turn) => turn.spanId)).toContain(stream.parentSpanId);
      expect(stream.attributes["threadline.chat.message_id"]).toEqual(expect.any(String));
    }
    expect(streams.reduce((sum, span) => sum + Number(span.attributes["threadline.chat.edits"]), 0)).toBe(
      edits.reduce((sum, n) => sum + n, 0),
    );
    expect(new Set(trace.map((span) => span.service))).toEqual(new Set(["threadline-test"]));

    const finished = lines.find((line) => line.msg === "run finished");
    expect(finished).toMatchObject({ trace_id: run.traceId, span_id: run.spanId });
  });
});

describe("log lines", () => {
  it("a gateway line naming a message in flight carries its intake span's ids, after an await too; other lines none", async () => {
    const lines: Record<string, unknown>[] = [];
    const log = createLogger(
      "info",
      {},
      {
        write: (line: string) => {
          lines.push(JSON.parse(line));
        },
      },
    );
    const thread = { platform: "slack", workspace: "T1", channel: "C1", thread: "log-lines" } as const;
    await traceIntake(
      {
        id: "m-log",
        thread,
        author: alice,
        text: "hi",
        attachments: [],
        mentionsBot: false,
        sentAt: Date.now(),
      },
      async () => {
        await new Promise((resolve) => setTimeout(resolve, 1));
        log.warn({ messageId: "m-log" }, "inside the intake");
        log.warn({ messageId: "other" }, "another message");
      },
    );
    log.warn({ messageId: "m-log" }, "after the intake");
    await tracing!.flush();
    const intake = receiver.spans.find(
      (span) => span.name === "intake" && span.attributes["threadline.message_id"] === "m-log",
    );
    expect(lines.find((line) => line.msg === "inside the intake")).toMatchObject({
      trace_id: intake!.traceId,
      span_id: intake!.spanId,
    });
    expect(lines.find((line) => line.msg === "another message")).not.toHaveProperty("trace_id");
    expect(lines.find((line) => line.msg === "after the intake")).not.toHaveProperty("trace_id");
  });
});

describe("traces across processes", () => {
  it("one trace crosses gateway → Redis → worker: intake → intake script → ack and enqueue, then the worker's run and chat posts", async () => {
    const redis = connect();
    const bull = connect({ blocking: true });
    const prefix = uniquePrefix("trace-x");
    const config = runsConfig({ prefix });
    const queue = createRunQueue(bull, prefix);
    const worker = spawn(
      process.execPath,
      [
        "--import",
        pathToFileURL(resolve(ROOT, "node_modules/tsx/dist/loader.mjs")).href,
        resolve(ROOT, "test/app/tracing-worker-child.ts"),
      ],
      {
        cwd: ROOT,
        env: { ...process.env, THREADLINE_PREFIX: prefix, OTEL_EXPORTER_OTLP_ENDPOINT: endpoint },
        stdio: ["ignore", "pipe", "inherit"],
      },
    );
    const exited = new Promise<number | null>((done) => worker.on("exit", done));
    try {
      await requireRedis(redis);
      await new Promise<void>((ready) => worker.stdout.once("data", () => ready()));
      const intake = new Intake(redis, queue, config);
      const platform = new MemoryOutbound();
      const gateway = createGateway({ intake, outbound: platform, config });
      const thread = { platform: "slack", workspace: "T1", channel: "C1", thread: `${prefix}-t` } as const;
      // The platform event, as an adapter hands it to the gateway.
      await gateway.message({
        id: "m1",
        thread,
        author: alice,
        text: "hello",
        attachments: [],
        mentionsBot: true,
        sentAt: Date.now(),
      });
      expect(await exited).toBe(0);
      await tracing!.flush();
      const intakeSpan = receiver.spans.find(
        (span) => span.name === "intake" && span.attributes["threadline.message_id"] === "m1",
      );
      expect(intakeSpan).toMatchObject({
        service: "threadline-test",
        parentSpanId: "", // a root: the trace starts at the platform event
        attributes: { "threadline.thread_id": `slack:T1:C1:${prefix}-t`, "threadline.mentions_bot": true },
      });
      const gatewaySide = receiver.spans.filter((span) => span.traceId === intakeSpan!.traceId);
      const submit = one(gatewaySide, "intake.submit");
      expect(submit.parentSpanId).toBe(intakeSpan!.spanId);
      expect(submit.attributes["threadline.intake.result"]).toBe("started");
      // The 👀 ack is a span of the message's intake.
      const ack = one(gatewaySide, "chat.react");
      expect(ack.parentSpanId).toBe(intakeSpan!.spanId);
      expect(platform.ops.filter((op) => op.op === "react").map((op) => op.emoji)).toEqual([
        config.reactions.seen,
      ]);
      const enqueue = one(gatewaySide, "run.enqueue");
      expect(enqueue.parentSpanId).toBe(submit.spanId);
      const runId = enqueue.attributes["threadline.run_id"];
      const run = receiver.spans.find(
        (span) => span.name === "run" && span.attributes["threadline.run_id"] === runId,
      );
      expect(run).toMatchObject({
        service: "threadline-worker-child",
        traceId: enqueue!.traceId,
        parentSpanId: enqueue!.spanId,
        attributes: { "threadline.outcome": "completed" },
      });
      const turn = receiver.spans.find((span) => span.name === "turn" && span.parentSpanId === run!.spanId);
      expect(
        receiver.spans.some((span) => span.name === "model.request" && span.parentSpanId === turn?.spanId),
      ).toBe(true);
      // The worker's chat posts are in the same trace, under the turn that wrote them.
      const post = receiver.spans.find(
        (span) => span.name === "chat.post" && span.parentSpanId === turn?.spanId,
      );
      expect(post).toMatchObject({ service: "threadline-worker-child", traceId: intakeSpan!.traceId });
    } finally {
      worker.kill();
      await queue.close();
      await deletePrefix(redis, prefix);
      redis.disconnect();
      bull.disconnect();
    }
  });
});

/** Runs test/app/tracing-child.ts with the imports it resolves appended to a file; returns them. */
async function importsOfChild(env: Record<string, string>): Promise<string[]> {
  const dir = await mkdtemp(join(tmpdir(), "threadline-imports-"));
  const log = join(dir, "imports.txt");
  try {
    const child = spawn(
      process.execPath,
      [
        "--import",
        pathToFileURL(resolve(ROOT, "node_modules/tsx/dist/loader.mjs")).href,
        "--import",
        pathToFileURL(resolve(ROOT, "test/support/import-log.mjs")).href,
        resolve(ROOT, "test/app/tracing-child.ts"),
      ],
      {
        cwd: ROOT,
        env: { PATH: process.env.PATH ?? "", IMPORT_LOG: log, ...env },
        stdio: ["ignore", "ignore", "pipe"],
      },
    );
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString("utf8");
    });
    const code = await new Promise<number | null>((done) => child.on("exit", done));
    expect(stderr).toBe("");
    expect(code).toBe(0);
    return (await readFile(log, "utf8")).split("\n").filter(Boolean);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const SDK =
  /node_modules\/@opentelemetry\/(sdk-trace|exporter-trace-otlp-http|resources|context-async-hooks)/;

describe("tracing off", () => {
  it("loads no OpenTelemetry SDK module when OTEL_EXPORTER_OTLP_ENDPOINT is unset (and does when it is set)", async () => {
    const off = await importsOfChild({});
    // The child did load the runs and the app modules (the check sees their imports).
    expect(off.some((url) => url.endsWith("/src/runs/tracing.ts"))).toBe(true);
    expect(off.some((url) => url.includes("/@opentelemetry/api/"))).toBe(true);
    expect(off.filter((url) => SDK.test(url))).toEqual([]);
    const on = await importsOfChild({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint });
    expect(on.some((url) => SDK.test(url))).toBe(true);
    // …and the span that child made in its run was exported.
    expect(receiver.spans.filter((span) => span.service === "threadline-child").map((s) => s.name)).toEqual([
      "run",
    ]);
  });
});
