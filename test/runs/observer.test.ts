import { afterEach, describe, expect, it } from "vitest";
import { Metrics } from "../../src/app/metrics.js";
import { gatedTool, RunsHarness } from "./harness.js";

let h: RunsHarness;
afterEach(async () => {
  await h?.close();
});

describe("run observer (metrics)", () => {
  it("records the run outcome, turns, tool calls, steering delivery and first visible activity", async () => {
    const metrics = new Metrics({ defaultMetrics: false });
    const slow = gatedTool("slow");
    h = await new RunsHarness({
      tools: [slow.tool],
      observer: metrics.observer(),
      script: [{ toolCalls: [{ id: "c1", name: "slow", arguments: {} }] }, { text: "done" }],
    }).start();
    const thread = h.thread();
    const runId = await h.mention(thread, "go");
    await slow.nextStart();
    await h.intake.submit(h.message(thread, "steer"));
    slow.release();
    await h.runFinished(runId);
    const text = (await metrics.render()).body;
    expect(text).toContain('threadline_runs_total{outcome="completed"} 1');
    expect(text).toContain("threadline_turns_total 2");
    expect(text).toContain('threadline_tool_calls_total{tool="slow",outcome="ok"} 1');
    expect(text).toContain("threadline_steering_delivery_seconds_count 1");
    expect(text).toContain("threadline_first_visible_reply_seconds_count 1");
  });

  it("logs one line when a run starts and one when it ends, with its thread, run and what it did", async () => {
    const lines: { level: string; fields: Record<string, unknown>; message: string }[] = [];
    const record = (level: string) => (fields: Record<string, unknown>, message: string) =>
      void lines.push({ level, fields, message });
    h = await new RunsHarness({
      log: { info: record("info"), warn: record("warn"), error: record("error") },
      script: [{ text: "hello" }],
    }).start();
    const thread = h.thread();
    const runId = await h.mention(thread, "hi");
    await h.runFinished(runId);
    const runLines = lines.filter((line) => line.fields.runId === runId);
    expect(runLines.map((line) => [line.level, line.message])).toEqual([
      ["info", "run started"],
      ["info", "run finished"],
    ]);
    expect(runLines[1]!.fields).toMatchObject({
      threadId: `slack:T1:C1:${thread.thread}`,
      outcome: "completed",
      turns: 1,
      toolCalls: 0,
    });
    expect(runLines[1]!.fields.durationMs).toEqual(expect.any(Number));
  });
});
