import { afterEach, describe, expect, it } from "vitest";
import type { ToolResultMessage } from "../../src/agent/index.js";
import { gatedTool, RunsHarness } from "./harness.js";

let h: RunsHarness;
afterEach(async () => {
  await h?.close();
});

describe("graceful worker shutdown", () => {
  it("aborts runs still going after the grace period and another worker resumes them from the transcript", async () => {
    const slow = gatedTool("slow");
    h = await new RunsHarness({
      tools: [slow.tool],
      script: [{ toolCalls: [{ id: "c1", name: "slow", arguments: {} }] }, { text: "resumed and done" }],
    }).start();
    const first = h.workers[0]!;
    const thread = h.thread();
    const runId = await h.mention(thread, "long job");
    await slow.nextStart();
    // The tool never finishes within the grace period: the run is aborted, its job left for a retry.
    await first.close({ graceMs: 50 });
    h.workers = [];
    await h.addWorker();
    await h.runFinished(runId);
    const transcript = await h.transcript(thread);
    const roles = transcript.map((m) => (m as { role: string }).role);
    expect(roles).toEqual(["user", "assistant", "toolResult", "assistant"]);
    const result = transcript[2] as ToolResultMessage;
    // The aborted call's outcome was recorded before the shutdown, so it is not run again.
    expect(result.isError).toBe(true);
    expect(slow.calls).toHaveLength(1);
    expect(h.model.requests.at(-1)?.messages.at(-1)).toMatchObject({ role: "toolResult", toolCallId: "c1" });
    expect(await h.isActive(thread)).toBe(false);
    expect(JSON.stringify(transcript[3])).toContain("resumed and done");
  });
});
