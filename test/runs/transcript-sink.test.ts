import { afterEach, describe, expect, it } from "vitest";
import type { AgentMessage, ToolResultMessage } from "../../src/agent/index.js";
import { threadId } from "../../src/chat/index.js";
import { Lease } from "../../src/runs/lease.js";
import { INTERRUPTED_TOOL_TEXT } from "../../src/runs/recovery.js";
import { APPEND, FINISH_CALLS, RECORD_CALL } from "../../src/runs/scripts.js";
import { ThreadScripts } from "../../src/runs/thread-scripts.js";
import { TranscriptSink } from "../../src/runs/transcript-sink.js";
import { until } from "../support/async.js";
import { monitorRedis, scriptCalls } from "../support/monitor.js";
import { connect, keysMatching } from "../support/redis.js";
import { instantTool, RunsHarness } from "./harness.js";

let h: RunsHarness;
afterEach(async () => {
  await h?.close();
});

const results = (messages: AgentMessage[]) =>
  messages.filter((m): m is ToolResultMessage => (m as { role?: string }).role === "toolResult");
const resultText = (m: ToolResultMessage) => m.content.map((b) => (b.type === "text" ? b.text : "")).join("");

describe("a finished tool call", () => {
  it("costs one script call: its done record and its result's append are one", async () => {
    const lookup = instantTool("lookup");
    h = await new RunsHarness({
      tools: [lookup.tool],
      script: [
        { toolCalls: [{ id: "c1", name: "lookup", arguments: { value: "a" } }] },
        { toolCalls: [{ id: "c2", name: "lookup", arguments: { value: "b" } }] },
        { toolCalls: [{ id: "c3", name: "lookup", arguments: { value: "c" } }] },
        { text: "done" },
      ],
    }).start();
    const monitor = await monitorRedis(h.redis);
    try {
      const thread = h.thread();
      await h.runFinished(await h.mention(thread, "look three things up"));
      await monitor.flush();
      expect(lookup.calls).toHaveLength(3);
      expect(results(await h.transcript(thread)).map(resultText)).toEqual([
        "lookup ok",
        "lookup ok",
        "lookup ok",
      ]);
      const calls = (script: Parameters<typeof scriptCalls>[1]) =>
        scriptCalls(monitor.sent, script, h.prefix);
      // Per finished tool: the "executing" record before it, then one script with its result.
      expect({
        recordCall: calls(RECORD_CALL),
        finishCalls: calls(FINISH_CALLS),
        append: calls(APPEND),
      }).toEqual({
        recordCall: 3,
        finishCalls: 3,
        append: 4, // the four assistant messages
      });
    } finally {
      await monitor.stop();
    }
  });

  it("leaves every key of the thread with a TTL of the retention (within its tolerance) after the run", async () => {
    const retention = 30 * 24 * 60 * 60 * 1000;
    h = await new RunsHarness({
      tools: [instantTool("lookup").tool],
      config: { retentionMs: retention },
      script: [{ toolCalls: [{ id: "c1", name: "lookup", arguments: {} }] }, { text: "done" }],
    }).start();
    const thread = h.thread();
    await h.runFinished(await h.mention(thread, "look it up"));
    const keys = await keysMatching(h.redis, `${h.prefix}:{${threadId(thread)}}:*`);
    expect(keys.length).toBeGreaterThanOrEqual(6);
    for (const key of keys) {
      const ttl = await h.redis.pttl(key);
      // At least the retention after the last write (a few seconds passed since), at most 60 s more.
      expect({ key, inTolerance: ttl > retention - 10_000 && ttl <= retention + 60_000 }).toEqual({
        key,
        inTolerance: true,
      });
    }
  });
});

describe("a worker that dies right after a tool finished", () => {
  /**
   * A worker that claimed the run, stored the prompt and an assistant message calling `lookup` and
   * `deploy`, started both and then saw `lookup` finish — driven through the real sink, as the session
   * drives it — and died before anything else: `then` is what it still did before dying.
   */
  async function dieAfterLookup(runId: string, then: (sink: TranscriptSink) => Promise<void>) {
    const connection = connect();
    const scripts = new ThreadScripts(connection, h.prefix);
    const id = threadId(h.thread());
    const start = await scripts.start(id, { run: runId, leaseMs: 60_000, steeringMode: "one" });
    if (start.kind !== "ok") throw new Error("expected a claim");
    const noop = () => {};
    const lease = new Lease(scripts, id, start.token, 60_000, {
      lost: noop,
      stopRequested: noop,
      beat: noop,
      failed: noop,
    });
    const sink = new TranscriptSink(scripts, lease, h.config.retentionMs, []);
    const [prompt] = sink.take("prompt", start.prompts);
    await sink.persist(prompt!);
    await sink.persist({
      role: "assistant",
      content: [
        { type: "toolCall", id: "c1", name: "lookup", arguments: {} },
        { type: "toolCall", id: "c2", name: "deploy", arguments: {} },
      ],
      stopReason: "toolUse",
      usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2, cost: { total: 0 } },
      timestamp: Date.now(),
    } as unknown as AgentMessage);
    expect(await sink.beginCall("c1", "lookup")).toBe(true);
    expect(await sink.beginCall("c2", "deploy")).toBe(true);
    sink.finishCall("c1", { content: [{ type: "text", text: "recorded lookup" }], details: {} }, false);
    await then(sink);
    await connection.quit();
  }

  it("keeps the result of a call that finished while the rest of its batch still ran", async () => {
    const lookup = instantTool("lookup");
    const deploy = instantTool("deploy");
    h = await new RunsHarness({
      workers: 0,
      tools: [lookup.tool, deploy.tool],
      script: [{ text: "ok" }],
    }).start();
    const thread = h.thread();
    const runId = await h.mention(thread, "look up, then deploy");
    // `deploy` still runs: no result message follows, the record is written on its own.
    await dieAfterLookup(runId, async () => {
      await until(async () => (await h.redis.hget(h.keys(thread).calls, "1:c1"))?.includes("done") === true);
    });
    await h.addWorker();
    await h.runFinished(runId);
    expect(lookup.calls).toHaveLength(0);
    expect(deploy.calls).toHaveLength(0);
    expect(results(await h.transcript(thread)).map((r) => [r.toolName, resultText(r), r.isError])).toEqual([
      ["lookup", "recorded lookup", false],
      ["deploy", INTERRUPTED_TOOL_TEXT, true],
    ]);
  });

  it("keeps a result appended with its record and appends it once", async () => {
    const lookup = instantTool("lookup");
    const deploy = instantTool("deploy");
    h = await new RunsHarness({
      workers: 0,
      tools: [lookup.tool, deploy.tool],
      script: [{ text: "ok" }],
    }).start();
    const thread = h.thread();
    const runId = await h.mention(thread, "look up, then deploy");
    // A sequential batch: the result message follows at once and carries the record.
    await dieAfterLookup(runId, async (sink) => {
      await sink.persist({
        role: "toolResult",
        toolCallId: "c1",
        toolName: "lookup",
        content: [{ type: "text", text: "recorded lookup" }],
        details: {},
        isError: false,
        timestamp: Date.now(),
      } as AgentMessage);
      const calls = await h.redis.hgetall(h.keys(thread).calls);
      expect(JSON.parse(calls["1:c1"]!)).toMatchObject({ status: "done" });
    });
    await h.addWorker();
    await h.runFinished(runId);
    expect(lookup.calls).toHaveLength(0);
    expect(results(await h.transcript(thread)).map((r) => [r.toolName, resultText(r), r.isError])).toEqual([
      ["lookup", "recorded lookup", false],
      ["deploy", INTERRUPTED_TOOL_TEXT, true],
    ]);
  });
});
