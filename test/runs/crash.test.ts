import type { ChildProcess } from "node:child_process";
import { afterEach, describe, expect, it, onTestFailed } from "vitest";
import type { ToolResultMessage } from "../../src/agent/index.js";
import { threadId } from "../../src/chat/index.js";
import { until } from "../support/async.js";
import { FixtureChildren } from "./fixtures/children.js";
import { alice, RunsHarness } from "./harness.js";

/**
 * Invariant 3: a worker process killed mid-run (SIGKILL, no cleanup) — BullMQ's stalled-job check hands the
 * job to another worker process, which resumes from the persisted transcript.
 */

const children = new FixtureChildren("./worker-child.ts");

let h: RunsHarness;

afterEach(async () => {
  await children.killAll();
  await h?.close();
});

/** Starts a worker process and resolves once it takes jobs. */
function startWorkerProcess(prefix: string, phase: string): Promise<ChildProcess> {
  return children.start({ TL_PREFIX: prefix, TL_PHASE: phase }, phase);
}

describe("a worker process killed mid-run", () => {
  it("resumes on another worker: finished tools are not re-run, the approval and the queued reply survive", async () => {
    children.logs = "";
    onTestFailed(() => console.error(`worker process logs:\n${children.logs}`));
    h = await new RunsHarness({ workers: 0 }).start();
    const key = (name: string) => `${h.prefix}:child:${name}`;
    const count = async (name: string) => Number((await h.redis.get(key(`executed:${name}`))) ?? 0);
    const thread = h.thread();

    const first = await startWorkerProcess(h.prefix, "1");
    const runId = await h.mention(thread, "take a note, then deploy", alice);
    // Sequential batch: `note` ran, `deploy` waits for its approval.
    // The approval's id is random; the run remembers it under the call's run-unique key (turn + call id).
    const approvalIdOf = () => h.redis.hget(h.keys(thread).approvals, "1:deploy-1");
    await until(async () => (await count("note")) === 1 && (await approvalIdOf()) !== null);
    const approvalId = (await approvalIdOf())!;
    expect(await count("deploy")).toBe(0);
    const reply = h.message(thread, "use the blue-green strategy");
    expect(await h.intake.submit(reply)).toEqual({
      kind: "queued",
      runId,
      disposition: "steer",
      waitingApprovals: ["deploy"],
    });

    await children.kill(first);
    // Decided while no worker is alive: the record keeps the decision for whoever resumes the run.
    expect(await h.intake.decide(thread, approvalId, alice, "approve")).toEqual({
      kind: "accepted",
      status: "approved",
    });
    await startWorkerProcess(h.prefix, "2");
    await until(async () => {
      const state = await h.queue.getJobState(runId);
      if (state === "failed") throw new Error("the resumed run job failed");
      return state === "completed";
    });

    expect(await h.redis.lrange(key("active"), 0, -1)).toEqual([`1:${runId}`, `2:${runId}`]);
    expect(await count("note")).toBe(1);
    expect(await count("deploy")).toBe(1);

    const transcript = await h.transcript(thread);
    expect(transcript.map((m) => (m as { role: string }).role)).toEqual([
      "user",
      "assistant",
      "toolResult",
      "toolResult",
      "user",
      "assistant",
    ]);
    const results = transcript.filter(
      (m): m is ToolResultMessage => (m as { role: string }).role === "toolResult",
    );
    expect(results.map((r) => [r.toolName, r.isError, r.content])).toEqual([
      ["note", false, [{ type: "text", text: "note done (1)" }]],
      ["deploy", false, [{ type: "text", text: "deploy done (1)" }]],
    ]);
    expect(await h.userTexts(thread)).toEqual([
      "Alice: take a note, then deploy",
      "Alice: use the blue-green strategy",
    ]);
    expect(await h.intake.messageState(thread, reply.id)).toBe("delivered");

    // What the model saw: one request per worker; the resumed one carries both results and the reply.
    const requests = (await h.redis.lrange(key("requests"), 0, -1)).map(
      (entry) => JSON.parse(entry) as { phase: string; messages: { role: string; text: string }[] },
    );
    expect(requests.map((r) => r.phase)).toEqual(["1", "2"]);
    expect(requests[1]!.messages).toEqual([
      { role: "user", text: "Alice: take a note, then deploy" },
      { role: "assistant", text: "" },
      { role: "toolResult", text: "note done (1)" },
      { role: "toolResult", text: "deploy done (1)" },
      { role: "user", text: "Alice: use the blue-green strategy" },
    ]);
    const chat = JSON.parse((await h.redis.get(key(`chat:${runId}`)))!) as { phase: string; texts: string[] };
    expect(chat.phase).toBe("2");
    expect(chat.texts.join("\n")).toContain("Deployed and noted.");

    expect(await h.isActive(thread)).toBe(false);
    expect((await h.store.meta(threadId(thread))).run).toBe("");
  }, 30_000);
});
