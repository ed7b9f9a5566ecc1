import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { Metrics } from "../../src/app/metrics.js";
import { startOpsServer } from "../../src/app/ops-server.js";
import { startWorkerProcess, type WorkerProcess } from "../../src/app/worker.js";
import type { ApprovalCard, ChatPlatform } from "../../src/chat/index.js";
import { parseEnv } from "../../src/config/index.js";
import { type RunTool, SILENT_LOGGER } from "../../src/runs/index.js";
import { ScriptedModel, type ScriptedResponse, testAgent } from "../fakes/scripted-model.js";
import { alice, bob, gatedTool, instantTool, jobFinished, RunsHarness } from "../runs/harness.js";
import { redisEnv } from "../support/redis.js";

let h: RunsHarness | undefined;
let worker: WorkerProcess | undefined;
let server: Server | undefined;
afterEach(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  await worker?.close();
  await h?.close();
  server = undefined;
  worker = undefined;
  h = undefined;
});

/**
 * A real worker process (as `threadline worker` composes it) on a real Redis, its metrics sampled from it
 * and served on a real ops server; the harness provides the gateway side (intake) and a memory chat.
 */
async function startWorker(tools: RunTool[], script: ScriptedResponse[]) {
  const harness = await new RunsHarness({ workers: 0 }).start();
  h = harness;
  const model = new ScriptedModel(script);
  const slack: ChatPlatform = {
    platform: "slack",
    outbound: harness.chat,
    start: async () => {},
    stop: async () => {},
  };
  const process = await startWorkerProcess({
    env: parseEnv({ ...redisEnv(), THREADLINE_PREFIX: harness.prefix }),
    log: SILENT_LOGGER,
    platforms: [slack],
    agent: testAgent(model.streamFn, tools),
    concurrency: 5,
  });
  worker = process;
  const metrics = new Metrics({ defaultMetrics: false });
  metrics.sampleRuns(process);
  server = await startOpsServer(0, metrics, async () => true);
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`;
  /** The two sampled gauges, read from `/metrics` as Prometheus would. */
  const scrape = async () => {
    const text = await (await fetch(url)).text();
    const value = (name: string) => new RegExp(`^${name} (\\S+)$`, "m").exec(text)?.[1];
    return { inboxDepth: value("threadline_inbox_depth"), runsActive: value("threadline_runs_active") };
  };
  return { harness, scrape };
}

describe("run gauges (sampled at scrape time)", () => {
  it("reports the queued replies of a parked run, and 0 once it ended", async () => {
    const slow = gatedTool("slow");
    const { harness, scrape } = await startWorker(
      [slow.tool],
      [{ toolCalls: [{ id: "c1", name: "slow", arguments: {} }] }, { text: "one" }, { text: "two" }],
    );
    expect(await scrape()).toEqual({ inboxDepth: "0", runsActive: "0" });
    const thread = harness.thread();
    const runId = await harness.mention(thread, "go");
    await slow.nextStart();
    for (const text of ["first steer", "second steer"])
      expect(await harness.intake.submit(harness.message(thread, text))).toMatchObject({
        kind: "queued",
        runId,
      });
    expect(await scrape()).toEqual({ inboxDepth: "2", runsActive: "1" });

    slow.release();
    await jobFinished(harness, runId);
    expect(await harness.userTexts(thread)).toEqual([
      "Alice: go",
      "Alice: first steer",
      "Alice: second steer",
    ]);
    expect(await scrape()).toEqual({ inboxDepth: "0", runsActive: "0" });
  });

  it("sums the inboxes of every run the process executes, including runs awaiting approval", async () => {
    const deploy = instantTool("deploy", "ask");
    const { harness, scrape } = await startWorker(
      [deploy.tool],
      [
        { toolCalls: [{ id: "d1", name: "deploy", arguments: {} }] },
        { toolCalls: [{ id: "d2", name: "deploy", arguments: {} }] },
      ],
    );
    const [a, b] = [harness.thread("a"), harness.thread("b")];
    const runA = await harness.mention(a, "deploy a");
    await harness.chat.waitFor((chat) => chat.ops.filter((op) => op.op === "postApproval").length === 1);
    const runB = await harness.mention(b, "deploy b");
    await harness.chat.waitFor((chat) => chat.ops.filter((op) => op.op === "postApproval").length === 2);
    await harness.intake.submit(harness.message(a, "a1"));
    await harness.intake.submit(harness.message(a, "a2"));
    await harness.intake.submit(harness.message(b, "b1", { author: bob }));
    expect(await scrape()).toEqual({ inboxDepth: "3", runsActive: "2" });

    const cards = harness.chat.ops
      .filter((op) => op.op === "postApproval")
      .map((op) => op.card as ApprovalCard);
    for (const [thread, card] of [
      [a, cards[0]!],
      [b, cards[1]!],
    ] as const)
      await harness.intake.decide(thread, card.approvalId, alice, "deny");
    await jobFinished(harness, runA);
    await jobFinished(harness, runB);
    expect(await scrape()).toEqual({ inboxDepth: "0", runsActive: "0" });
  });

  it("shows NaN for the inbox depth when Redis does not answer, without failing the scrape", async () => {
    const metrics = new Metrics({ defaultMetrics: false });
    metrics.sampleRuns({
      activeThreadIds: () => ["slack:T1:C1:1.0"],
      inboxDepth: async () => {
        throw new Error("Connection is closed.");
      },
    });
    const text = (await metrics.render()).body;
    // prom-client writes NaN as "Nan"; Prometheus parses either (Go ParseFloat ignores case).
    expect(text).toMatch(/^threadline_inbox_depth nan$/im);
    expect(text).toMatch(/^threadline_runs_active 1$/m);
    expect(text).toContain("sum across processes");
  });
});
