import type { ChildProcess } from "node:child_process";
import { afterEach, describe, expect, it, onTestFailed } from "vitest";
import type { ThreadRef } from "../../src/chat/index.js";
import { FakeSlackServer } from "../fakes/slack-server.js";
import { until } from "../support/async.js";
import { FixtureChildren } from "./fixtures/children.js";
import { alice, RunsHarness } from "./harness.js";

/**
 * Issue 15, item 11: a worker killed (SIGKILL) while a tool runs leaves its reply showing `🔧 slow …`. The
 * worker that resumes the run edits that very message (the run keeps its reply's message ids in Redis), so
 * the line says the call was interrupted; the resumed run's answer follows in a message of its own.
 */

const children = new FixtureChildren("./reply-child.ts");

let h: RunsHarness | undefined;
let slack: FakeSlackServer | undefined;

afterEach(async () => {
  await children.killAll();
  await h?.close();
  await slack?.close();
  h = undefined;
  slack = undefined;
});

function startWorkerProcess(prefix: string, phase: string, server: FakeSlackServer): Promise<ChildProcess> {
  return children.start(
    {
      TL_PREFIX: prefix,
      TL_PHASE: phase,
      SLACK_API_URL: server.apiUrl,
      SLACK_BOT_TOKEN: server.config.botToken,
    },
    phase,
  );
}

describe("a worker killed while a tool runs", () => {
  it("the resuming worker settles the dead worker's `🔧 tool …` line in that worker's own message", async () => {
    children.logs = "";
    onTestFailed(() => console.error(`worker process logs:\n${children.logs}`));
    slack = await FakeSlackServer.start();
    const server = slack;
    h = await new RunsHarness({ workers: 0 }).start();
    const harness = h;
    const root = server.post({ user: "U0ALICE", channel: "C1", text: "run the slow thing" });
    const thread: ThreadRef = {
      platform: "slack",
      workspace: server.config.teamId,
      channel: "C1",
      thread: root.ts,
    };
    const bot = () =>
      server.store.botMessages("C1", root.ts, server.config.botUserId).filter((m) => !m.deleted);

    const first = await startWorkerProcess(harness.prefix, "1", server);
    const result = await harness.intake.submit(
      harness.message(thread, "run the slow thing", { mentionsBot: true, author: alice }),
    );
    if (result.kind !== "started") throw new Error(`expected a run, got ${result.kind}`);
    const runId = result.runId;
    // The tool runs (and never returns) and the reply shows its running line…
    await until(async () => Number(await harness.redis.get(`${harness.prefix}:child:executed:slow`)) === 1);
    await until(() => bot().some((m) => m.text.includes("🔧 slow …")));
    const stale = bot().find((m) => m.text.includes("🔧 slow …"))!;
    // …and the run has recorded that message (what the worker resuming it reads).
    await until(
      async () => (await harness.redis.hexists(harness.keys(thread).replies(runId), stale.ts)) === 1,
    );
    await children.kill(first);

    await startWorkerProcess(harness.prefix, "2", server);
    await until(async () => {
      const state = await harness.queue.getJobState(runId);
      if (state === "failed") throw new Error("the resumed run job failed");
      return state === "completed";
    });

    // The dead worker's message, edited by the second worker: the line is settled, the rest kept.
    const settled = server.store.get("C1", stale.ts)!;
    expect(settled.text).not.toContain("🔧 slow …");
    expect(settled.text).toContain("🔧 slow ⚠️ interrupted — worker restarted");
    // The resumed run told the model the call was interrupted and answered below, in a new message.
    const texts = bot().map((m) => m.text);
    expect(texts.at(-1)).toContain("Recovered.");
    expect(bot().at(-1)!.ts).not.toBe(stale.ts);
    expect(Number(await harness.redis.get(`${harness.prefix}:child:executed:slow`))).toBe(1);
    // Nothing of the record is left once the run ended.
    expect(await harness.redis.exists(harness.keys(thread).replies(runId))).toBe(0);
  }, 30_000);
});
