import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it, onTestFailed } from "vitest";
import type { ToolResultMessage } from "../../src/agent/index.js";
import { INTERRUPTED_TOOL_TEXT } from "../../src/runs/index.js";
import { until } from "../support/async.js";
import { redisEnv } from "../support/redis.js";
import { alice, RunsHarness } from "./harness.js";

/**
 * Issue 12's seams between processes: a gateway killed between deciding a start and adding its job (item 2),
 * a worker paused while another takes its run over (item 4), a worker killed while an approved call runs
 * (item 5). Real processes, real Redis, SIGKILL and SIGSTOP.
 */

const CHILD = fileURLToPath(new URL("./fixtures/seam-child.ts", import.meta.url));
const ROOT = fileURLToPath(new URL("../../", import.meta.url));

let h: RunsHarness;
const children: ChildProcess[] = [];
let logs = "";

afterEach(async () => {
  for (const child of children.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGCONT");
      child.kill("SIGKILL");
      await exited;
    }
  }
  await h?.close();
});

/** Starts a child and resolves once it printed `until`. */
function child(env: Record<string, string>, until: string): Promise<ChildProcess> {
  const proc = spawn(process.execPath, ["--import", "tsx", CHILD], {
    cwd: ROOT,
    env: { ...process.env, ...redisEnv(), TL_PREFIX: h.prefix, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(proc);
  proc.stderr?.on("data", (part: Buffer) => {
    logs += part.toString();
  });
  return new Promise((resolve, reject) => {
    proc.stdout?.on("data", (part: Buffer) => {
      if (part.toString().includes(until)) resolve(proc);
    });
    proc.once("exit", (code, signal) => reject(new Error(`seam child exited (${code ?? signal}):\n${logs}`)));
  });
}

function kill(proc: ChildProcess): Promise<void> {
  const exited = new Promise<void>((resolve) => proc.once("exit", () => resolve()));
  proc.kill("SIGKILL");
  return exited;
}

const executed = async (tool: string) =>
  Number((await h.redis.get(`${h.prefix}:child:executed:${tool}`)) ?? 0);

describe("item 2: a decided start always gets its job", () => {
  async function gatewayDiesAfterDeciding() {
    logs = "";
    onTestFailed(() => console.error(`child logs:\n${logs}`));
    h = await new RunsHarness({
      workers: 0,
      script: [{ text: "answered" }],
      config: { startSweepGraceMs: 300, startSweepIntervalMs: 100 },
    }).start();
    const thread = h.thread();
    const mention = h.message(thread, "hello?", { mentionsBot: true });
    const gateway = await child(
      { TL_ROLE: "gateway", TL_PHASE: "g", TL_MESSAGE: JSON.stringify(mention) },
      "decided",
    );
    await kill(gateway);
    expect(await h.isActive(thread)).toBe(true); // the start was decided: the thread has its lease
    expect(await h.queue.getJobCounts("waiting", "active", "delayed")).toMatchObject({
      waiting: 0,
      active: 0,
      delayed: 0,
    });
    return { thread, mention };
  }

  it("the platform's retry of the mention adds the missing job (same run, one job)", async () => {
    const { thread, mention } = await gatewayDiesAfterDeciding();
    expect(await h.intake.submit(mention)).toEqual({ kind: "duplicate" });
    expect(await h.intake.submit(mention)).toEqual({ kind: "duplicate" });
    const jobs = await h.queue.getJobs(["waiting"]);
    expect(jobs).toHaveLength(1);
    await h.addWorker();
    await h.runFinished(jobs[0]!.id!);
    expect(h.chat.texts(thread).join("\n")).toContain("answered");
    expect(await h.userTexts(thread)).toEqual(["Alice: hello?"]);
  });

  it("without a retry, a worker's start sweeper finds the lease without a job and enqueues it", async () => {
    const { thread } = await gatewayDiesAfterDeciding();
    await h.addWorker();
    await until(async () => h.chat.texts(thread).join("\n").includes("answered"));
    await h.quiescent([thread]);
    expect(await h.userTexts(thread)).toEqual(["Alice: hello?"]);
    expect(h.model.requests).toHaveLength(1);
  });
});

describe("item 4: a paused worker and the worker that took over its run", () => {
  it("never both run it: the paused one is fenced out when it wakes, the tool runs once", async () => {
    logs = "";
    onTestFailed(() => console.error(`child logs:\n${logs}`));
    h = await new RunsHarness({ workers: 0 }).start();
    const thread = h.thread();
    const paused = await child({ TL_ROLE: "worker", TL_PHASE: "1", TL_MODEL_HOLD_MS: "1500" }, "ready");
    const runId = await h.mention(thread, "take a note");
    await until(async () => (await h.redis.get(`${h.prefix}:child:model-called`)) === "1");
    paused.kill("SIGSTOP"); // a VM freeze: no heartbeat, no lock renewal
    await child({ TL_ROLE: "worker", TL_PHASE: "2", TL_HOLD_TOOLS: "1" }, "ready");
    await until(async () => (await executed("note")) === 1); // the takeover runs the tool, and holds it
    paused.kill("SIGCONT"); // the paused worker wakes while its successor still runs the run
    await until(
      async () => logs.includes("[seam-child 1] warn lost the thread lease") || (await executed("note")) > 1,
    );
    await new Promise((resolve) => setTimeout(resolve, 300)); // room for anything the woken worker would do
    await h.redis.set(`${h.prefix}:child:release`, "1");
    await until(async () => (await h.queue.getJobState(runId)) === "completed");
    expect(await executed("note")).toBe(1);
    const transcript = await h.transcript(thread);
    expect(transcript.map((m) => (m as { role: string }).role)).toEqual([
      "user",
      "assistant",
      "toolResult",
      "assistant",
    ]);
  });
});

describe("item 5: an approved call that was running when its worker died", () => {
  it("is reported as interrupted on resume, never executed again", async () => {
    logs = "";
    onTestFailed(() => console.error(`child logs:\n${logs}`));
    h = await new RunsHarness({ workers: 0 }).start();
    const thread = h.thread();
    const first = await child({ TL_ROLE: "worker", TL_PHASE: "1", TL_TOOL: "deploy" }, "ready");
    const runId = await h.mention(thread, "deploy to prod", alice);
    const approvalId = async () => h.redis.hget(h.keys(thread).approvals, "1:call_0");
    await until(async () => (await approvalId()) !== null);
    expect(await h.intake.decide(thread, (await approvalId())!, alice, "approve")).toMatchObject({
      kind: "accepted",
    });
    await until(async () => (await executed("deploy")) === 1); // running, and it never returns in phase 1
    await kill(first);
    await child({ TL_ROLE: "worker", TL_PHASE: "2", TL_TOOL: "deploy" }, "ready");
    await until(async () => (await h.queue.getJobState(runId)) === "completed");
    expect(await executed("deploy")).toBe(1);
    const results = (await h.transcript(thread)).filter(
      (m): m is ToolResultMessage => (m as { role: string }).role === "toolResult",
    );
    expect(results.map((r) => [r.toolName, r.isError, r.content])).toEqual([
      ["deploy", true, [{ type: "text", text: INTERRUPTED_TOOL_TEXT }]],
    ]);
  });
});
