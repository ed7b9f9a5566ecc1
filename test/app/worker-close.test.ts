import { afterEach, describe, expect, it } from "vitest";
import { startWorkerProcess, type WorkerProcess } from "../../src/app/worker.js";
import type { ChatOutbound, ChatPlatform } from "../../src/chat/index.js";
import { parseEnv } from "../../src/config/index.js";
import type { RunLogger } from "../../src/runs/index.js";
import { ScriptedModel, testAgent } from "../fakes/scripted-model.js";
import { jobFinished, RunsHarness } from "../runs/harness.js";
import { redisEnv } from "../support/redis.js";

let h: RunsHarness | undefined;
let worker: WorkerProcess | undefined;
afterEach(async () => {
  await worker?.close({ settleMs: 0 });
  await h?.close();
  worker = undefined;
  h = undefined;
});

/** A log that keeps its warnings. */
function recordingLog(): RunLogger & { warnings: string[] } {
  const warnings: string[] = [];
  const quiet = () => {};
  return {
    info: quiet,
    debug: quiet,
    error: quiet,
    warn: (_fields, message) => warnings.push(message),
    warnings,
  };
}

/**
 * A real worker process (as `threadline worker` composes it) on a real Redis, posting through an outbound
 * that still has a write in the background when its run ends (as Slack's agent-session `active` does while
 * its Tier 3 budget is used up): `settled()` resolves when the test lets it (`failing`: it rejects at once,
 * breaking its contract).
 */
async function startWorker(log: RunLogger, failing = false) {
  const harness = await new RunsHarness({ workers: 0 }).start();
  h = harness;
  const events: string[] = [];
  let finishWrites!: () => void;
  let noteAsked!: () => void;
  const asked = new Promise<void>((resolve) => {
    noteAsked = resolve;
  });
  const writes = new Promise<void>((resolve) => {
    finishWrites = () => {
      events.push("background writes done");
      resolve();
    };
  });
  const outbound: ChatOutbound = Object.assign(Object.create(harness.chat) as ChatOutbound, {
    settled: () => {
      events.push("settled asked");
      noteAsked();
      return failing ? Promise.reject(new Error("the outbound broke")) : writes;
    },
  });
  const slack: ChatPlatform = { platform: "slack", outbound, start: async () => {}, stop: async () => {} };
  const model = new ScriptedModel([{ text: "done" }]);
  worker = await startWorkerProcess({
    env: parseEnv({ ...redisEnv(), THREADLINE_PREFIX: harness.prefix }),
    log,
    platforms: [slack],
    agent: testAgent(model.streamFn),
    concurrency: 2,
  });
  return { harness, events, asked, finishWrites, worker };
}

describe("a closing worker and the chat writes its runs left in the background", () => {
  it("waits for them before it closes its connections", async () => {
    const log = recordingLog();
    const { harness, events, asked, finishWrites, worker: process } = await startWorker(log);
    const runId = await harness.mention(harness.thread(), "go");
    await jobFinished(harness, runId);
    const closed = process.close({ settleMs: 60_000 }).then(() => events.push("closed"));
    await asked;
    finishWrites();
    await closed;
    worker = undefined;
    expect(events).toEqual(["settled asked", "background writes done", "closed"]);
    expect(log.warnings).toEqual([]);
  });

  it("waits no longer than settleMs for writes that do not finish, and says so", async () => {
    const log = recordingLog();
    const { harness, events, worker: process } = await startWorker(log);
    const runId = await harness.mention(harness.thread(), "go");
    await jobFinished(harness, runId);
    await process.close({ settleMs: 50 });
    worker = undefined;
    expect(events).toEqual(["settled asked"]);
    expect(log.warnings).toEqual(["worker closed with chat writes still queued (agent-session statuses)"]);
  });

  it("closes, without a warning, when an outbound's settled() rejects", async () => {
    const log = recordingLog();
    const { harness, events, worker: process } = await startWorker(log, true);
    const runId = await harness.mention(harness.thread(), "go");
    await jobFinished(harness, runId);
    await process.close({ settleMs: 60_000 });
    worker = undefined;
    expect(events).toEqual(["settled asked"]);
    expect(log.warnings).toEqual([]);
  });
});
