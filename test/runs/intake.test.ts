import type { Redis } from "ioredis";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type IncomingMessage, type ThreadRef, threadId } from "../../src/chat/index.js";
import {
  createRunQueue,
  Intake,
  type RunQueue,
  runsConfig,
  ThreadStore,
  threadKeys,
} from "../../src/runs/index.js";
import { ThreadScripts } from "../../src/runs/thread-scripts.js";
import { connect, deletePrefix, requireRedis, uniquePrefix } from "../support/redis.js";

const thread: ThreadRef = { platform: "slack", workspace: "T1", channel: "C1", thread: "100.1" };
const alice = { id: "U1", name: "Alice" };

let seq = 0;
function message(text: string, overrides: Partial<IncomingMessage> = {}): IncomingMessage {
  seq++;
  return {
    id: `m${seq}`,
    thread,
    author: alice,
    text,
    attachments: [],
    mentionsBot: false,
    sentAt: 1_700_000_000_000 + seq,
    ...overrides,
  };
}

let redis: Redis;
let bull: Redis;
let prefix: string;
let queue: RunQueue;
let intake: Intake;
let store: ThreadStore;

beforeAll(async () => {
  redis = connect();
  bull = connect({ blocking: true });
  await requireRedis(redis);
});
afterAll(async () => {
  redis.disconnect();
  bull.disconnect();
});
beforeEach(() => {
  prefix = uniquePrefix("intake");
  queue = createRunQueue(bull, prefix);
  intake = new Intake(redis, queue, runsConfig({ prefix, queueCap: 3 }));
  store = new ThreadStore(redis, prefix);
});
afterEach(async () => {
  await queue.close();
  await deletePrefix(redis, prefix);
});

describe("Intake.submit", () => {
  it("ignores a non-mention in a thread the bot is not engaged in", async () => {
    expect(await intake.submit(message("hello"))).toEqual({ kind: "ignored" });
    expect((await queue.getJobCounts("waiting")).waiting).toBe(0);
  });

  it("starts a run on a mention: job enqueued with the run id, thread active and engaged", async () => {
    const result = await intake.submit(message("do X", { mentionsBot: true }));
    expect(result.kind).toBe("started");
    const runId = (result as { runId: string }).runId;
    const job = await queue.getJob(runId);
    expect(job?.data).toEqual({ threadId: threadId(thread), runId });
    expect(await intake.activeRun(thread)).toBe(runId);
    const meta = await store.meta(threadId(thread));
    expect(meta).toMatchObject({ engaged: true, run: runId, startedBy: alice, requester: alice });
  });

  it("queues replies for the active run with the default disposition, and dedupes retries", async () => {
    const first = await intake.submit(message("do X", { mentionsBot: true }));
    const reply = message("also Y");
    const queued = await intake.submit(reply);
    expect(queued).toEqual({
      kind: "queued",
      runId: (first as { runId: string }).runId,
      disposition: "steer",
      waitingApprovals: [],
    });
    expect(await intake.submit(reply)).toEqual({ kind: "duplicate" });
    expect(await intake.submit({ ...reply, text: "replayed" })).toEqual({ kind: "duplicate" });
    const keys = threadKeys(prefix, threadId(thread));
    expect(await redis.lrange(keys.inbox, 0, -1)).toHaveLength(2); // the prompt and the reply, once
    expect((await queue.getJobCounts("waiting")).waiting).toBe(1);
  });

  it("stores the author-prefixed text and lists attachments", async () => {
    const m = message("look", {
      mentionsBot: true,
      attachments: [
        { name: "plot.png", mimeType: "image/png", sizeBytes: 2048, url: "https://files/plot.png" },
      ],
    });
    await intake.submit(m);
    const body = await redis.hget(threadKeys(prefix, threadId(thread)).body, m.id);
    expect(JSON.parse(body!).content[0].text).toBe(
      "Alice: look\n[attached files: plot.png (image/png, 2 KB) https://files/plot.png]",
    );
  });

  it("refuses messages past the queue cap with a visible reason", async () => {
    await intake.submit(message("start", { mentionsBot: true })); // the prompt counts toward the cap
    expect((await intake.submit(message("a"))).kind).toBe("queued");
    expect((await intake.submit(message("b"))).kind).toBe("queued");
    const refused = await intake.submit(message("c"));
    expect(refused.kind).toBe("refused");
    expect((refused as { reason: string }).reason).toMatch(/limit 3/);
  });

  it("treats an exact 'stop' reply as a stop request while a run is active", async () => {
    const started = await intake.submit(message("go", { mentionsBot: true }));
    expect(await intake.submit(message("  Stop "))).toEqual({
      kind: "stopping",
      runId: (started as { runId: string }).runId,
    });
    expect((await store.meta(threadId(thread))).stopBy).toEqual(alice);
  });

  it("requires a mention to start a run in an idle engaged thread when configured", async () => {
    const strict = new Intake(redis, queue, runsConfig({ prefix, requireMentionWhenIdle: true }));
    await strict.submit(message("go", { mentionsBot: true }));
    await redis.del(threadKeys(prefix, threadId(thread)).lease); // the run ended
    expect(await strict.submit(message("and then?"))).toEqual({ kind: "ignored" });
    expect((await strict.submit(message("and then?", { mentionsBot: true }))).kind).toBe("started");
  });
});

describe("Intake queue edits", () => {
  it("changes disposition, text and presence only while the message is queued", async () => {
    await intake.submit(message("go", { mentionsBot: true }));
    const reply = message("steer me");
    await intake.submit(reply);
    const keys = threadKeys(prefix, threadId(thread));
    expect(await intake.setDisposition(thread, reply.id, "followUp")).toBe(true);
    expect(await redis.hget(keys.disposition, reply.id)).toBe("followUp");
    expect(await intake.edit({ ...reply, text: "edited" })).toBe(true);
    expect(JSON.parse((await redis.hget(keys.body, reply.id))!).content[0].text).toBe("Alice: edited");
    expect(await intake.withdraw(thread, reply.id)).toBe(true);
    expect(await redis.lrange(keys.inbox, 0, -1)).not.toContain(reply.id);
    expect(await intake.messageState(thread, reply.id)).toBe("withdrawn");
    // Once withdrawn (like once delivered) nothing changes any more.
    expect(await intake.setDisposition(thread, reply.id, "steer")).toBe(false);
    expect(await intake.edit({ ...reply, text: "again" })).toBe(false);
    expect(await intake.withdraw(thread, reply.id)).toBe(false);
  });

  it("never changes the disposition of the message that started the run", async () => {
    const m = message("go", { mentionsBot: true });
    await intake.submit(m);
    expect(await intake.setDisposition(thread, m.id, "followUp")).toBe(false);
  });

  it("reports unknown messages as not changed", async () => {
    expect(await intake.setDisposition(thread, "nope", "steer")).toBe(false);
    expect(await intake.withdraw(thread, "nope")).toBe(false);
  });
});

describe("the start script (what a worker does first with a run's job)", () => {
  const keys = () => threadKeys(prefix, threadId(thread));
  const start = async (runId: string, steeringMode = "one") =>
    new ThreadScripts(redis, prefix).start(threadId(thread), { run: runId, leaseMs: 30_000, steeringMode });
  const ids = (drained: { id: string }[]) => drained.map((entry) => entry.id);
  // Room for a few queued messages (the file's intake has a cap of 3).
  const roomy = () => new Intake(redis, queue, runsConfig({ prefix, queueCap: 10 }));

  it("claims the lease; returns the transcript, the meta, the prompts and the first steering poll", async () => {
    const prompt = message("hello", { mentionsBot: true });
    const { runId } = (await roomy().submit(prompt)) as { runId: string };
    const steers = [message("also this"), message("and this")]; // queued for the run as steering
    const later = message("after that");
    for (const reply of [...steers, later]) await roomy().submit(reply);
    expect(await roomy().setDisposition(thread, later.id, "followUp")).toBe(true);

    const started = await start(runId);
    if (started.kind !== "ok") throw new Error("expected a claim");
    const { token, stopBy, transcript, meta, prompts, steering } = started;
    expect([stopBy, transcript]).toEqual(["", []]);
    expect(meta.run).toBe(runId);
    expect(ids(prompts)).toEqual([prompt.id]);
    expect(prompts[0]!.body).toContain("Alice: hello");
    expect(ids(steering)).toEqual([steers[0]!.id]); // one at a time
    expect(await redis.lrange(keys().inflight, 0, -1)).toEqual([prompt.id, steers[0]!.id]);
    expect(await redis.lrange(keys().inbox, 0, -1)).toEqual([steers[1]!.id, later.id]);
    // The lease holds this claim's own fencing token.
    expect(token).toBe(`${runId}#1`);
    expect(await redis.get(keys().lease)).toBe(token);
  });

  it("drains every steering message in 'all' mode, and never follow-ups", async () => {
    const { runId } = (await roomy().submit(message("hello", { mentionsBot: true }))) as { runId: string };
    const steers = [message("one"), message("two")];
    for (const reply of steers) await roomy().submit(reply);
    const follow = message("three");
    await roomy().submit(follow);
    await roomy().setDisposition(thread, follow.id, "followUp");
    const started = await start(runId, "all");
    expect(started.kind === "ok" && ids(started.steering)).toEqual(steers.map((m) => m.id));
    expect(await redis.lrange(keys().inbox, 0, -1)).toEqual([follow.id]);
  });

  it("drains nothing when a stop is pending, and nothing for a stale job", async () => {
    const prompt = message("hello", { mentionsBot: true });
    const { runId } = (await roomy().submit(prompt)) as { runId: string };
    const steer = message("also this");
    await roomy().submit(steer);
    expect(await start("some-older-run")).toEqual({ kind: "stale" });
    await roomy().stop(thread, alice);
    const started = await start(runId);
    if (started.kind !== "ok") throw new Error("expected a claim");
    expect(JSON.parse(started.stopBy)).toEqual(alice);
    expect([started.prompts, started.steering]).toEqual([[], []]);
    expect(await redis.lrange(keys().inbox, 0, -1)).toEqual([prompt.id, steer.id]);
  });
});
