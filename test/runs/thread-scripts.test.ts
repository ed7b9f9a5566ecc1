import { afterEach, describe, expect, it } from "vitest";
import { threadId } from "../../src/chat/index.js";
import { THREAD_KEY_NAMES } from "../../src/runs/scripts.js";
import { ThreadScripts } from "../../src/runs/thread-scripts.js";
import { monitorRedis } from "../support/monitor.js";
import { RunsHarness } from "./harness.js";

let h: RunsHarness;
afterEach(async () => {
  await h?.close();
});

const RETENTION = 30 * 24 * 60 * 60 * 1000;
/** The tolerance W of the retention (see `touch` in scripts.ts): min(60 s, R / 10). */
const SLACK = 60_000;

/** A thread whose run a claim took (the prompt drained into the in-flight list), and that claim. */
async function claimed() {
  h = await new RunsHarness({ workers: 0, config: { retentionMs: RETENTION } }).start();
  const thread = h.thread();
  const runId = await h.mention(thread, "hello");
  const scripts = new ThreadScripts(h.redis, h.prefix);
  const id = threadId(thread);
  const start = await scripts.start(id, { run: runId, leaseMs: 60_000, steeringMode: "one" });
  if (start.kind !== "ok") throw new Error("expected a claim");
  const keys = scripts.keys(id);
  const ttls = async () => {
    const out: Record<string, number> = {};
    for (const name of THREAD_KEY_NAMES) {
      if (name !== "lease" && (await h.redis.exists(keys[name])) === 1)
        out[name] = await h.redis.pttl(keys[name]);
    }
    return out;
  };
  return { scripts, id, keys, start, ttls };
}

describe("thread key retention", () => {
  it("the in-flight list a start drained into expires with the thread", async () => {
    const { keys } = await claimed();
    expect(await h.redis.llen(keys.inflight)).toBe(1);
    expect(await h.redis.pttl(keys.inflight)).toBeGreaterThan(RETENTION - 10_000);
  });

  it("a write soon after a full refresh sets only the keys it wrote; every key still lives the retention", async () => {
    const { scripts, id, start, ttls } = await claimed();
    const monitor = await monitorRedis(h.redis);
    try {
      await scripts.recordCall(id, {
        token: start.token,
        callKey: "1:c1",
        record: JSON.stringify({ status: "executing", tool: "t", startedAt: 0 }),
        onlyIfAbsent: 1,
        retention: RETENTION,
      });
      await monitor.flush();
      const expires = monitor.inScripts.filter(([name = ""]) => name.toLowerCase() === "pexpire");
      expect(expires.map(([, key]) => key)).toEqual([scripts.keys(id).calls]);
    } finally {
      await monitor.stop();
    }
    for (const [name, ttl] of Object.entries(await ttls())) {
      expect({ name, inTolerance: ttl > RETENTION - 10_000 && ttl <= RETENTION + SLACK }).toEqual({
        name,
        inTolerance: true,
      });
    }
  });

  it("a write once the last full refresh is older than the tolerance refreshes every key", async () => {
    const { scripts, id, keys, start, ttls } = await claimed();
    // As if more than W had passed since the submit's full refresh: meta's TTL tells.
    for (const name of THREAD_KEY_NAMES) {
      if (name !== "lease") await h.redis.pexpire(keys[name], RETENTION - SLACK / 2);
    }
    await scripts.append(id, { token: start.token, retention: RETENTION }, [
      JSON.stringify({ role: "user" }),
    ]);
    const after = await ttls();
    expect(Object.keys(after).sort()).toEqual(
      ["body", "disposition", "inflight", "meta", "origin", "state", "transcript"].sort(),
    );
    for (const [name, ttl] of Object.entries(after)) {
      expect({ name, refreshed: ttl > RETENTION }).toEqual({ name, refreshed: true });
    }
  });
});
