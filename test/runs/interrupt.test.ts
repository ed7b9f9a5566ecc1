import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import type { AssistantMessage, Message, ToolResultMessage } from "../../src/agent/index.js";
import { DEFAULT_REACTIONS, type IncomingMessage, type ThreadRef } from "../../src/chat/index.js";
import { createGateway, type RunTool } from "../../src/runs/index.js";
import { until } from "../support/async.js";
import { alice, bob, gatedTool, RunsHarness } from "./harness.js";

/** ⚡ interrupts end to end: intake, gateway reactions, bus event and Redis state, worker, scripted model. */

let h: RunsHarness;
afterEach(async () => {
  await h?.close();
});

const INTERRUPTED_BY_ALICE =
  "Interrupted by a new message from Alice; the tool was stopped before it finished.";

function gateway() {
  return createGateway({ intake: h.intake, outbound: h.chat, config: h.config });
}

/** Resolves once `condition` holds (polled; bounded by the test timeout — an ordering aid, not a timing check). */
function zap(thread: ThreadRef, message: IncomingMessage, user = alice) {
  return gateway().reaction({
    thread,
    messageId: message.id,
    user,
    emoji: DEFAULT_REACTIONS.interrupt,
    added: true,
  });
}

function roles(messages: readonly { role: string }[]): string[] {
  return messages.map((message) => message.role);
}

function lastUserText(messages: readonly Message[]): string {
  const last = messages.filter((message) => message.role === "user").at(-1);
  const content = last?.content;
  return typeof content === "string"
    ? content
    : (content ?? []).map((b) => (b.type === "text" ? b.text : "")).join("");
}

function marks(messageId: string): string[] {
  return [...(h.chat.message(messageId)?.reactions ?? [])].sort();
}

/** A tool that waits until its signal aborts (an interruptible wait, like polling a build). */
function waitTool(): RunTool {
  return {
    name: "wait_for_build",
    description: "waits for the build",
    parameters: z.object({}),
    interruptible: true,
    execute: (_id, _params, signal) =>
      new Promise((_, reject) => {
        // The signal may have aborted while the run recorded the call (a Redis round trip before execute).
        if (signal?.aborted) reject(new Error("wait aborted"));
        signal?.addEventListener("abort", () => reject(new Error("wait aborted")));
      }),
  };
}

describe("⚡ during a streaming answer", () => {
  it("aborts the stream, keeps the partial answer marked interrupted, and the next request carries the message", async () => {
    h = await new RunsHarness({
      script: [{ text: "Here is a long ans", hang: true }, { text: "ok, switching" }],
    }).start();
    const thread = h.thread();
    const runId = await h.mention(thread, "write an essay");
    await until(() => h.model.requests.length === 1, 2);
    const reply = h.message(thread, "no, a haiku");
    expect(await h.intake.submit(reply)).toMatchObject({ kind: "queued", disposition: "steer" });
    await zap(thread, reply);
    await h.runFinished(runId);

    expect(h.model.requests).toHaveLength(2);
    expect(h.model.requests[0]?.options.signal?.aborted).toBe(true);
    const next = h.model.requests[1]!.messages;
    expect(roles(next)).toEqual(["user", "assistant", "user"]);
    expect(lastUserText(next)).toBe("Alice: no, a haiku");
    const transcript = await h.transcript(thread);
    const cut = transcript[1] as AssistantMessage;
    expect(cut).toMatchObject({ role: "assistant", stopReason: "aborted", interrupted: { by: "Alice" } });
    expect(cut.content).toEqual([{ type: "text", text: "Here is a long ans" }]);
    expect((transcript[3] as AssistantMessage).stopReason).toBe("stop");
    expect(await h.intake.messageState(thread, reply.id)).toBe("delivered");
    await h.chat.waitFor(() => marks(reply.id).includes(DEFAULT_REACTIONS.delivered));
    expect(marks(reply.id)).toEqual([DEFAULT_REACTIONS.delivered]);
    expect(await h.isActive(thread)).toBe(false);
    // The chat shows the cut answer as cut, by whom, and then the new answer; no failure line.
    await h.chat.waitFor((chat) => chat.texts(thread).join("\n").includes("ok, switching"));
    const shown = h.chat.texts(thread).join("\n");
    expect(shown).toMatch(/Here is a long ans\s+⚡ _interrupted by Alice_[\s\S]*ok, switching/);
    expect(shown).not.toContain("aborted");
  });

  it("a reply starting with the prefix is queued as an interrupt (⚡), without the prefix", async () => {
    h = await new RunsHarness({ script: [{ text: "draft", hang: true }, { text: "ok" }] }).start();
    const thread = h.thread();
    const runId = await h.mention(thread, "go");
    await until(() => h.model.requests.length === 1, 2);
    const reply = h.message(thread, "!! stop, use Python");
    await gateway().message(reply);
    await h.runFinished(runId);
    expect(lastUserText(h.model.requests[1]!.messages)).toBe("Alice: stop, use Python");
    expect((await h.transcript(thread))[1]).toMatchObject({
      stopReason: "aborted",
      interrupted: { by: "Alice" },
    });
    await h.chat.waitFor(() => marks(reply.id).includes(DEFAULT_REACTIONS.delivered));
    expect(marks(reply.id)).toEqual([DEFAULT_REACTIONS.delivered]);
    expect(
      h.chat.opsFor(thread).some((op) => op.op === "react" && op.emoji === DEFAULT_REACTIONS.interrupt),
    ).toBe(true);
  });

  it("someone who is neither the author nor an approver changes nothing", async () => {
    h = await new RunsHarness({ script: [{ text: "draft", hang: true }] }).start();
    const thread = h.thread();
    await h.mention(thread, "go");
    await until(() => h.model.requests.length === 1, 2);
    const reply = h.message(thread, "mine");
    await h.intake.submit(reply);
    await zap(thread, reply, bob);
    expect(await h.redis.hget(h.keys(thread).disposition, reply.id)).toBe("steer");
    expect(h.model.requests).toHaveLength(1);
  });

  it("an interrupt whose event was missed is read from Redis on the next heartbeat", async () => {
    h = await new RunsHarness({
      config: { leaseMs: 300 },
      script: [{ text: "draft", hang: true }, { text: "ok" }],
    }).start();
    const thread = h.thread();
    const runId = await h.mention(thread, "go");
    await until(() => h.model.requests.length === 1, 2);
    const reply = h.message(thread, "now please");
    await h.intake.submit(reply);
    // The state without its event: as if the publish was lost while the subscriber reconnected.
    await h.redis.hset(h.keys(thread).disposition, reply.id, "interrupt");
    await h.runFinished(runId);
    expect(lastUserText(h.model.requests[1]!.messages)).toBe("Alice: now please");
    expect((await h.transcript(thread))[1]).toMatchObject({
      stopReason: "aborted",
      interrupted: { by: "Alice" },
    });
  });
});

describe("⚡ while tools run", () => {
  it("is delivered after the batch; a running tool that is not interruptible is untouched, an interruptible one is aborted with the reason", async () => {
    const slow = gatedTool("slow");
    h = await new RunsHarness({
      tools: [slow.tool, waitTool()],
      script: [
        {
          toolCalls: [
            { id: "c1", name: "slow", arguments: {} },
            { id: "c2", name: "wait_for_build", arguments: {} },
          ],
        },
        { text: "ok" },
      ],
    }).start();
    const thread = h.thread();
    const runId = await h.mention(thread, "build it");
    await slow.nextStart();
    const reply = h.message(thread, "skip the build");
    await h.intake.submit(reply);
    await zap(thread, reply);
    // The interruptible wait ends at once; the batch still waits for the other tool.
    await until(async () => (await h.redis.hlen(h.keys(thread).calls)) === 2, 2);
    await until(
      async () => (await h.redis.hvals(h.keys(thread).calls)).some((v) => v.includes("Interrupted")),
      2,
    );
    expect(h.model.requests).toHaveLength(1);
    slow.release();
    await h.runFinished(runId);

    const next = h.model.requests[1]!.messages;
    expect(roles(next)).toEqual(["user", "assistant", "toolResult", "toolResult", "user"]);
    const [first, second] = next.filter((m): m is ToolResultMessage => m.role === "toolResult");
    expect(first).toMatchObject({
      toolCallId: "c1",
      isError: false,
      content: [{ type: "text", text: "slow done" }],
    });
    expect(second).toMatchObject({
      toolCallId: "c2",
      isError: true,
      content: [{ type: "text", text: INTERRUPTED_BY_ALICE }],
    });
    expect(lastUserText(next)).toBe("Alice: skip the build");
    expect((await h.transcript(thread))[1]).not.toHaveProperty("interrupted");
  });

  it("a plain steer also ends an interruptible wait (the wait yields to it)", async () => {
    h = await new RunsHarness({
      tools: [waitTool()],
      script: [{ toolCalls: [{ id: "c1", name: "wait_for_build", arguments: {} }] }, { text: "ok" }],
    }).start();
    const thread = h.thread();
    const runId = await h.mention(thread, "wait for the build");
    await until(async () => (await h.redis.hlen(h.keys(thread).calls)) === 1, 2);
    await h.intake.submit(h.message(thread, "don't wait"));
    await h.runFinished(runId);
    const results = h.model.requests[1]!.messages.filter(
      (m): m is ToolResultMessage => m.role === "toolResult",
    );
    expect(results[0]?.content).toEqual([{ type: "text", text: INTERRUPTED_BY_ALICE }]);
    expect(lastUserText(h.model.requests[1]!.messages)).toBe("Alice: don't wait");
  });
});
