import { afterEach, describe, expect, it } from "vitest";
import type { AssistantMessage, ToolResultMessage } from "../../src/agent/index.js";
import { DEFAULT_REACTIONS } from "../../src/chat/index.js";
import { DRAIN } from "../../src/runs/scripts.js";
import { deferred } from "../support/async.js";
import { monitorRedis, scriptCalls } from "../support/monitor.js";
import { alice, gatedTool, instantTool, RunsHarness } from "./harness.js";

let h: RunsHarness;
afterEach(async () => {
  await h?.close();
});

function lastUserText(request: { messages: { role: string; content: unknown }[] }): string {
  const users = request.messages.filter((m) => m.role === "user");
  const content = users.at(-1)?.content as { text: string }[];
  return content.map((b) => b.text).join("");
}

describe("a run end to end (scripted model, memory chat)", () => {
  it("answers a mention, persists the transcript in order and releases the thread", async () => {
    h = await new RunsHarness({ script: [{ text: ["Hel", "lo ", "there"] }] }).start();
    const thread = h.thread();
    const runId = await h.mention(thread, "hi bot");
    await h.runFinished(runId);
    const transcript = await h.transcript(thread);
    expect(transcript.map((m) => (m as { role: string }).role)).toEqual(["user", "assistant"]);
    expect(await h.userTexts(thread)).toEqual(["Alice: hi bot"]);
    expect(h.model.requests[0]?.systemPrompt).toBe("You are a test bot.");
    expect(await h.isActive(thread)).toBe(false);
    expect(h.chat.texts(thread).join("\n")).toContain("Hello there");
  });

  it("continues the same transcript on an idle reply without a mention", async () => {
    h = await new RunsHarness({ script: [{ text: "first" }, { text: "second" }] }).start();
    const thread = h.thread();
    await h.runFinished(await h.mention(thread, "one"));
    const result = await h.intake.submit(h.message(thread, "two"));
    expect(result.kind).toBe("started");
    await h.runFinished((result as { runId: string }).runId);
    expect(h.model.requests[1]?.messages.map((m) => m.role)).toEqual(["user", "assistant", "user"]);
    expect(await h.userTexts(thread)).toEqual(["Alice: one", "Alice: two"]);
  });
});

describe("steering and follow-ups through Redis", () => {
  it("delivers a mid-run reply as steering in the very next model request and marks it delivered", async () => {
    const slow = gatedTool("slow");
    h = await new RunsHarness({
      tools: [slow.tool],
      script: [{ toolCalls: [{ id: "c1", name: "slow", arguments: {} }] }, { text: "ok, steered" }],
    }).start();
    const thread = h.thread();
    const runId = await h.mention(thread, "do the slow thing");
    await slow.nextStart();
    const reply = h.message(thread, "use blue instead");
    expect(await h.intake.submit(reply)).toMatchObject({ kind: "queued", disposition: "steer" });
    slow.release();
    await h.runFinished(runId);
    expect(h.model.requests).toHaveLength(2);
    expect(h.model.requests[1]?.messages.map((m) => m.role)).toEqual([
      "user",
      "assistant",
      "toolResult",
      "user",
    ]);
    expect(lastUserText(h.model.requests[1]!)).toBe("Alice: use blue instead");
    expect(await h.intake.messageState(thread, reply.id)).toBe("delivered");
    await h.chat.waitFor(
      (chat) => chat.message(reply.id)?.reactions.has(DEFAULT_REACTIONS.delivered) ?? false,
    );
    expect(await h.intake.setDisposition(thread, reply.id, "followUp")).toBe(false);
  });

  it("reads Redis for steering once per turn boundary, unless a steer was announced, and still delivers one", async () => {
    const lookup = instantTool("lookup");
    const slow = gatedTool("slow");
    h = await new RunsHarness({
      tools: [lookup.tool, slow.tool],
      script: [
        { toolCalls: [{ id: "c1", name: "lookup", arguments: {} }] },
        { toolCalls: [{ id: "c2", name: "slow", arguments: {} }] },
        { toolCalls: [{ id: "c3", name: "lookup", arguments: {} }] },
        { text: "done" },
      ],
    }).start();
    const monitor = await monitorRedis(h.redis);
    try {
      const thread = h.thread();
      const runId = await h.mention(thread, "three steps");
      await slow.nextStart();
      const steer = h.message(thread, "and hurry");
      expect(await h.intake.submit(steer)).toMatchObject({ kind: "queued", disposition: "steer" });
      slow.release();
      await h.runFinished(runId);
      await monitor.flush();
      // The steer reached the request right after the tool it was sent during.
      expect(lastUserText(h.model.requests[2]!)).toBe("Alice: and hurry");
      expect(h.model.requests).toHaveLength(4);
      // One steering drain after each of the four turns (the second took the steer). The loop's second poll
      // at the start of the next turn, a microtask after an empty one, reads nothing new and costs no round
      // trip (docs/agent-loop.md §2.2.1b); the first poll of the run was the start script's.
      const steeringDrains = monitor.sent.filter(
        (args) => scriptCalls([args], DRAIN, h.prefix) === 1 && args.includes("steer"),
      );
      expect(steeringDrains).toHaveLength(4);
    } finally {
      await monitor.stop();
    }
  });

  it("holds a follow-up until the agent would stop, and a flip back to steer before delivery wins", async () => {
    const slow = gatedTool("slow");
    h = await new RunsHarness({
      tools: [slow.tool],
      script: [
        { toolCalls: [{ id: "c1", name: "slow", arguments: {} }] },
        { text: "answer one" },
        { text: "answer to follow-up" },
      ],
    }).start();
    const thread = h.thread();
    const runId = await h.mention(thread, "start");
    await slow.nextStart();
    const later = h.message(thread, "after you are done, summarize");
    const flipped = h.message(thread, "actually steer this");
    await h.intake.submit(later);
    await h.intake.submit(flipped);
    expect(await h.intake.setDisposition(thread, later.id, "followUp")).toBe(true);
    expect(await h.intake.setDisposition(thread, flipped.id, "followUp")).toBe(true);
    expect(await h.intake.setDisposition(thread, flipped.id, "steer")).toBe(true);
    slow.release();
    await h.runFinished(runId);
    expect(h.model.requests).toHaveLength(3);
    expect(lastUserText(h.model.requests[1]!)).toBe("Alice: actually steer this");
    expect(lastUserText(h.model.requests[2]!)).toBe("Alice: after you are done, summarize");
    expect(h.model.requests[2]?.messages.map((m) => m.role)).toEqual([
      "user",
      "assistant",
      "toolResult",
      "user",
      "assistant",
      "user",
    ]);
  });

  it("applies an edit to a queued reply and drops a deleted one", async () => {
    const slow = gatedTool("slow");
    h = await new RunsHarness({
      tools: [slow.tool],
      script: [{ toolCalls: [{ id: "c1", name: "slow", arguments: {} }] }, { text: "done" }],
    }).start();
    const thread = h.thread();
    const runId = await h.mention(thread, "start");
    await slow.nextStart();
    const edited = h.message(thread, "typo");
    const deleted = h.message(thread, "never mind");
    await h.intake.submit(edited);
    await h.intake.submit(deleted);
    expect(await h.intake.edit({ ...edited, text: "fixed text" })).toBe(true);
    expect(await h.intake.withdraw(thread, deleted.id)).toBe(true);
    slow.release();
    await h.runFinished(runId);
    expect(await h.userTexts(thread)).toEqual(["Alice: start", "Alice: fixed text"]);
    expect(await h.intake.edit({ ...edited, text: "too late" })).toBe(false);
  });

  it("a message that arrives after the last follow-up poll is still answered in the same run", async () => {
    const gate = deferred();
    h = await new RunsHarness({ script: [{ text: "first answer" }, { text: "late answer" }] }).start();
    const thread = h.thread();
    // Queue a message while the first answer streams: the release must see it and go on.
    h.model.push();
    const runId = await h.mention(thread, "start");
    const late = h.message(thread, "one more thing");
    const submitted = h.intake.submit(late).then((r) => {
      gate.resolve();
      return r;
    });
    await gate.promise;
    expect((await submitted).kind === "queued" || (await submitted).kind === "started").toBe(true);
    const result = await submitted;
    if (result.kind === "started") await h.runFinished(result.runId);
    await h.runFinished(runId);
    expect(await h.userTexts(thread)).toEqual(["Alice: start", "Alice: one more thing"]);
    expect(await h.isActive(thread)).toBe(false);
  });
});

describe("stop", () => {
  it("aborts a streaming model call; queued messages enter the transcript as not processed; no new run", async () => {
    const streaming = deferred();
    h = await new RunsHarness({
      script: [
        () => {
          streaming.resolve();
          return { hang: true };
        },
      ],
    }).start();
    const thread = h.thread();
    const runId = await h.mention(thread, "write a novel");
    await streaming.promise;
    const queued = h.message(thread, "and make it long");
    await h.intake.submit(queued);
    expect(await h.intake.stop(thread, alice)).toEqual({ kind: "stopping", runId });
    await h.runFinished(runId);
    const transcript = await h.transcript(thread);
    const assistant = transcript.find(
      (m) => (m as { role: string }).role === "assistant",
    ) as AssistantMessage;
    expect(assistant.stopReason).toBe("aborted");
    expect(await h.userTexts(thread)).toEqual(["Alice: write a novel", "Alice: and make it long"]);
    expect(await h.intake.messageState(thread, queued.id)).toBe("notprocessed");
    await h.chat.waitFor(
      (chat) => chat.message(queued.id)?.reactions.has(DEFAULT_REACTIONS.notProcessed) ?? false,
    );
    expect(await h.isActive(thread)).toBe(false);
    expect(await h.queue.getJobCounts("waiting", "active", "delayed")).toMatchObject({
      waiting: 0,
      active: 0,
      delayed: 0,
    });
    expect(h.model.requests).toHaveLength(1);
    expect(h.chat.texts(thread).join("\n")).toContain("Alice");
  });

  it("aborts a running tool: the tool gets the signal, the call gets a result, no further model request", async () => {
    const slow = gatedTool("slow");
    h = await new RunsHarness({
      tools: [slow.tool],
      script: [{ toolCalls: [{ id: "c1", name: "slow", arguments: {} }] }, { text: "unreachable" }],
    }).start();
    const thread = h.thread();
    const runId = await h.mention(thread, "go");
    await slow.nextStart();
    const stop = await h.intake.submit(h.message(thread, "stop"));
    expect(stop).toEqual({ kind: "stopping", runId });
    await h.runFinished(runId);
    const transcript = await h.transcript(thread);
    const result = transcript.find((m) => (m as { role: string }).role === "toolResult") as ToolResultMessage;
    expect(result.isError).toBe(true);
    expect(result.content).toEqual([{ type: "text", text: "tool aborted" }]);
    expect(h.model.requests).toHaveLength(1);
    expect((transcript.at(-1) as AssistantMessage).stopReason).toBe("aborted");
  });

  it("a stop for an idle thread does nothing", async () => {
    h = await new RunsHarness().start();
    expect(await h.intake.stop(h.thread(), alice)).toEqual({ kind: "idle" });
  });
});
