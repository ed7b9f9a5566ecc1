import { afterEach, describe, expect, it } from "vitest";
import type { AgentMessage } from "../../src/agent/index.js";
import { threadId } from "../../src/chat/index.js";
import { createContextManager } from "../../src/context/index.js";
import { SUMMARY_PREFIX } from "../../src/llm/context-summary.js";
import { isContextSummary, type SummarizeInput } from "../../src/llm/index.js";
import { alice, RunsHarness } from "./harness.js";

let h: RunsHarness;
afterEach(async () => {
  await h?.close();
});

/** An older conversation of `turns` × 2 messages, as an earlier run would have stored it. */
function history(turns: number): AgentMessage[] {
  const messages: AgentMessage[] = [];
  for (let i = 0; i < turns; i++) {
    messages.push({
      role: "user",
      content: `Alice: question ${i} ${"about the release ".repeat(20)}`,
      timestamp: i,
    });
    messages.push({
      role: "assistant",
      content: [{ type: "text", text: `Answer ${i}: ${"the release is blocked on review ".repeat(20)}` }],
      api: "scripted",
      provider: "scripted",
      model: "scripted",
      usage: {
        input: 0,
        output: 0,
        cacheRead: 0,
        cacheWrite: 0,
        totalTokens: 0,
        cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
      },
      stopReason: "stop",
      timestamp: i,
    });
  }
  return messages;
}

function text(message: AgentMessage | undefined): string {
  const content = (message as { content?: unknown } | undefined)?.content;
  if (typeof content === "string") return content;
  return Array.isArray(content) ? content.map((block: { text?: string }) => block.text ?? "").join("") : "";
}

describe("context summaries in the worker", () => {
  it("are persisted in the Redis transcript once and reused by the next run", async () => {
    const calls: SummarizeInput[] = [];
    h = await new RunsHarness({
      agent: {
        contextTransform: createContextManager({
          contextWindow: 8_192,
          summarize: async (input) => {
            calls.push(input);
            return "Alice asked many release questions; the release is blocked on review.";
          },
        }),
      },
      script: [{ text: "first answer" }, { text: "second answer" }],
    }).start();
    const thread = h.thread();
    const old = history(150);
    await h.redis.rpush(h.keys(thread).transcript, ...old.map((message) => JSON.stringify(message)));

    await h.runFinished(await h.mention(thread, "what is blocking the release?", alice));
    expect(calls).toHaveLength(1);
    const first = h.model.requests[0]!;
    expect(text(first.messages[0])).toBe(
      `${SUMMARY_PREFIX}\n\nAlice asked many release questions; the release is blocked on review.`,
    );
    expect(first.messages.length).toBeLessThan(old.length);
    expect(text(first.messages.at(-1))).toContain("what is blocking the release?");

    // Everything is still in the transcript; the summary was appended right before the answer it served.
    const stored = await h.store.loadTranscript(threadId(thread));
    expect(stored.slice(0, old.length)).toEqual(old);
    const summaries = stored.filter(isContextSummary);
    expect(summaries).toHaveLength(1);
    expect(stored.indexOf(summaries[0]!)).toBe(old.length + 1);
    expect(text(stored[old.length + 2])).toBe("first answer");

    // The next run loads the summary from Redis and makes no new summary call.
    await h.runFinished(await h.mention(thread, "and now?", alice));
    expect(calls).toHaveLength(1);
    expect(text(h.model.requests[1]!.messages[0])).toContain("the release is blocked on review.");
    expect((await h.store.loadTranscript(threadId(thread))).filter(isContextSummary)).toHaveLength(1);
  });
});
