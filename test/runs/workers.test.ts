import { afterEach, describe, expect, it } from "vitest";
import type { StreamFn } from "../../src/agent/index.js";
import { threadId } from "../../src/chat/index.js";
import { ThreadScripts } from "../../src/runs/thread-scripts.js";
import { until } from "../support/async.js";
import { connect } from "../support/redis.js";
import { gatedTool, RunsHarness } from "./harness.js";

/** Invariant 2: one active run per thread across workers, with a liveness lease. */

let h: RunsHarness;
afterEach(async () => {
  await h?.close();
});

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Polls until `condition` holds (bounded by the test's timeout). */
/**
 * A worker that took a run and died: it starts the run with the real script (claiming the lease and
 * draining the prompts, as a worker does) and drains what else it is told to, then never heartbeats,
 * acks or releases anything.
 */
async function deadWorker(runId: string, drain: ("steer" | "followUp")[] = []) {
  const connection = connect();
  const scripts = new ThreadScripts(connection, h.prefix);
  const id = threadId(h.thread());
  const steeringMode = h.config.steeringMode === "all" ? "all" : "one";
  const start = await scripts.start(id, { run: runId, leaseMs: h.config.leaseMs, steeringMode });
  const drained: string[] = [];
  if (start.kind === "ok") drained.push(...[...start.prompts, ...start.steering].map((entry) => entry.id));
  if (start.kind === "ok") {
    for (const disposition of drain) {
      const reply = await scripts.drain(id, { token: start.token, disposition, mode: "all" });
      if (reply.kind === "ok") drained.push(...reply.entries.map((entry) => entry.id));
    }
  }
  connection.disconnect();
  return { claim: start.kind, drained };
}

describe("one active run per thread across two workers", () => {
  it("never overlaps two runs of a thread while a burst of messages arrives", async () => {
    // Model requests of this thread in flight at once: within one run they are sequential, so a second
    // concurrent request means a second run is executing.
    let inFlight = 0;
    let maxInFlight = 0;
    let requests = 0;
    const counting: StreamFn = async (model, context, options) => {
      requests++;
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      const stream = await h.model.streamFn(model, context, options);
      void stream.result().finally(() => inFlight--);
      return stream;
    };
    h = new RunsHarness({
      workers: 2,
      concurrency: 5,
      separateConnections: true,
      agent: { streamFn: counting },
    });
    h.model.fallback = () => ({ text: "ok", delayMs: 3 });
    await h.start();
    const thread = h.thread();
    const accepted: string[] = [];
    let started = 0;
    const submit = async (text: string): Promise<number> => {
      const message = h.message(thread, text, { mentionsBot: true });
      const result = await h.intake.submit(message);
      expect(["started", "queued"]).toContain(result.kind);
      accepted.push(message.id);
      return result.kind === "started" ? 1 : 0;
    };
    for (let wave = 0; wave < 6; wave++) {
      await until(async () => !(await h.isActive(thread)), 10);
      // Simultaneous messages to an idle thread: exactly one starts a run (on whichever worker takes it).
      const burst = await Promise.all(Array.from({ length: 8 }, (_, i) => submit(`wave ${wave} burst ${i}`)));
      expect(burst.reduce((a, b) => a + b, 0)).toBe(1);
      started++;
      // More while that run works and as it ends: queued for it, or starting the next run once it released.
      for (let i = 0; i < 6; i++) {
        await sleep(i % 3);
        started += await submit(`wave ${wave} late ${i}`);
      }
    }
    await h.quiescent([thread]);

    expect(maxInFlight).toBe(1);
    expect(requests).toBeGreaterThanOrEqual(started);
    const ids = (await h.transcript(thread))
      .map((m) => (m as { chatMessageId?: string }).chatMessageId)
      .filter((id): id is string => id !== undefined);
    expect(ids.slice().sort()).toEqual(accepted.slice().sort());
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("a live run keeps its lease past leaseMs by heartbeating: a reply meanwhile is queued, not a new run", async () => {
    const slow = gatedTool("slow");
    h = await new RunsHarness({
      tools: [slow.tool],
      config: { leaseMs: 600 },
      script: [{ toolCalls: [{ id: "c1", name: "slow", arguments: {} }] }, { text: "done" }],
    }).start();
    const thread = h.thread();
    const runId = await h.mention(thread, "take your time");
    await slow.nextStart();
    await sleep(900); // longer than the lease: only heartbeats keep it
    const reply = h.message(thread, "still there?");
    expect(await h.intake.submit(reply)).toEqual({
      kind: "queued",
      runId,
      disposition: "steer",
      waitingApprovals: [],
    });
    slow.release();
    await h.runFinished(runId);
    expect(await h.userTexts(thread)).toEqual(["Alice: take your time", "Alice: still there?"]);
    expect(h.model.requests).toHaveLength(2);
    expect(await h.isActive(thread)).toBe(false);
  });
});

describe("lease expiry and redelivery after a worker died", () => {
  it("an expired lease frees the thread: a new message starts a run, the dead run's job is stale", async () => {
    const slow = gatedTool("slow");
    h = await new RunsHarness({
      workers: 0,
      tools: [slow.tool],
      config: { leaseMs: 500 },
      script: [{ toolCalls: [{ id: "c1", name: "slow", arguments: {} }] }, { text: "all three seen" }],
    }).start();
    const thread = h.thread();
    const deadRun = await h.mention(thread, "first");
    expect((await deadWorker(deadRun)).claim).toBe("ok");
    const queued = h.message(thread, "second");
    expect(await h.intake.submit(queued)).toMatchObject({ kind: "queued", runId: deadRun });

    await until(async () => !(await h.isActive(thread)), 10); // nobody heartbeats: the lease runs out
    const third = await h.intake.submit(h.message(thread, "third", { mentionsBot: true }));
    expect(third.kind).toBe("started");
    const liveRun = (third as { runId: string }).runId;
    expect(liveRun).not.toBe(deadRun);

    // The dead run's job comes back only once the live run holds the thread (as BullMQ's stalled-job
    // check would hand it to a worker at any moment).
    const deadJob = (await h.queue.getJob(deadRun))!;
    await deadJob.remove();
    await h.addWorker();
    await slow.nextStart(); // the live run is in its tool call, holding the thread
    await h.queue.add("run", deadJob.data, { jobId: deadRun });
    await h.runFinished(deadRun);
    expect(await h.intake.activeRun(thread)).toBe(liveRun); // the stale job took nothing from the live run
    expect(h.model.requests).toHaveLength(1);
    expect(await h.queue.getJobState(deadRun)).toBe("completed");

    slow.release();
    await h.runFinished(liveRun);
    // Nothing was lost or reordered: the dead run's prompt and its queued reply went to the next run, once
    // each, ahead of the message that started it (found by `npm run chaos`: they used to follow it).
    expect(h.model.requests).toHaveLength(2);
    const texts = await h.userTexts(thread);
    expect(texts).toEqual(["Alice: first", "Alice: second", "Alice: third"]);
    const seen = h.model.requests[0]!.messages.filter((m) => m.role === "user");
    expect(seen).toHaveLength(3);
    expect(await h.isActive(thread)).toBe(false);
    expect((await h.store.meta(threadId(thread))).run).toBe("");
  });

  it.each([
    ["while the dead worker's lease is still held", false],
    ["after the dead worker's lease expired", true],
  ])(
    "messages a dead worker drained are redelivered exactly once when its job runs again (%s)",
    async (_name, expire) => {
      h = await new RunsHarness({
        workers: 0,
        config: { leaseMs: 500 },
        script: [{ text: "answer to one and two" }, { text: "answer to three" }],
      }).start();
      const thread = h.thread();
      const runId = await h.mention(thread, "one");
      const steer = h.message(thread, "two");
      const later = h.message(thread, "three");
      await h.intake.submit(steer);
      await h.intake.submit(later);
      expect(await h.intake.setDisposition(thread, later.id, "followUp")).toBe(true);

      const dead = await deadWorker(runId, ["steer"]);
      expect(dead.claim).toBe("ok");
      expect(dead.drained).toHaveLength(2);
      const keys = h.keys(thread);
      expect(await h.redis.llen(keys.inflight)).toBe(2);
      if (expire) await until(async () => !(await h.isActive(thread)), 10);

      await h.addWorker(); // the job runs again (as after BullMQ's stalled-job retry)
      await h.runFinished(runId);

      expect(await h.userTexts(thread)).toEqual(["Alice: one", "Alice: two", "Alice: three"]);
      expect(h.model.requests).toHaveLength(2);
      expect(h.model.requests[0]!.messages.map((m) => m.role)).toEqual(["user", "user"]);
      expect(h.model.requests[1]!.messages.map((m) => m.role)).toEqual(["user", "user", "assistant", "user"]);
      for (const id of [...dead.drained, later.id])
        expect(await h.intake.messageState(thread, id)).toBe("delivered");
      expect(await h.redis.llen(keys.inflight)).toBe(0);
      expect(await h.redis.llen(keys.inbox)).toBe(0);
      expect(await h.isActive(thread)).toBe(false);
    },
  );

  it("a job resumed after its answer was saved delivers a reply queued meanwhile (drained at start, then requeued)", async () => {
    h = await new RunsHarness({ workers: 0, script: [{ text: "answer to the reply" }] }).start();
    const thread = h.thread();
    const runId = await h.mention(thread, "question");
    // A worker took the run, saved the prompt and the answer, and died before releasing the thread.
    const connection = connect();
    const scripts = new ThreadScripts(connection, h.prefix);
    const id = threadId(thread);
    const start = await scripts.start(id, { run: runId, leaseMs: h.config.leaseMs, steeringMode: "one" });
    if (start.kind !== "ok") throw new Error("expected a claim");
    const promptId = start.prompts[0]!.id;
    expect(await scripts.ack(id, { token: start.token, msgId: promptId, retention: 0 })).toEqual({
      kind: "ok",
    });
    const answer = {
      role: "assistant",
      content: [{ type: "text", text: "first answer" }],
      stopReason: "stop",
    };
    await scripts.append(id, { token: start.token, retention: 0 }, [JSON.stringify(answer)]);
    connection.disconnect();
    const reply = h.message(thread, "one more thing");
    expect(await h.intake.submit(reply)).toMatchObject({ kind: "queued", runId });

    await h.addWorker(); // the job runs again: the transcript ends with the answer, the reply is queued
    await h.runFinished(runId);

    expect(await h.userTexts(thread)).toEqual(["Alice: question", "Alice: one more thing"]);
    expect(h.model.requests).toHaveLength(1);
    expect(await h.intake.messageState(thread, reply.id)).toBe("delivered");
    expect(await h.isActive(thread)).toBe(false);
  });
});
