import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import type { AssistantMessage, ToolResultMessage } from "../../src/agent/index.js";
import { createConvertToLlm, createOpenAIStreamFn, openAIModel } from "../../src/llm/index.js";
import type { RunTool } from "../../src/runs/index.js";
import { FakeOpenAIServer, textReply, toolCallReply } from "../fakes/openai-server.js";
import { alice, bob, RunsHarness } from "./harness.js";

/**
 * A run end to end with the real OpenAI-compatible provider against a local server speaking the
 * chat-completions protocol: Redis intake, a BullMQ worker, the openai SDK over HTTP, the memory chat.
 */

let server: FakeOpenAIServer;
let h: RunsHarness;

afterEach(async () => {
  await h?.close();
  await server?.close();
});

const SYSTEM_PROMPT = "You are Threadline, a helpful bot.";

function weatherTool(calls: Record<string, unknown>[]): RunTool {
  return {
    name: "weather",
    description: "Current weather for a city",
    parameters: z.object({ city: z.string() }),
    execute: async (_id, params: Record<string, unknown>) => {
      calls.push(params);
      return { content: [{ type: "text", text: "sunny, 21°C" }], details: {} };
    },
  };
}

async function start(tools: RunTool[] = []): Promise<void> {
  server = await FakeOpenAIServer.start();
  h = await new RunsHarness({
    agent: {
      model: openAIModel({ id: "fake-model", baseUrl: server.baseURL }),
      streamFn: createOpenAIStreamFn({ apiKey: "sk-e2e", maxRetries: 0, timeoutMs: 10_000 }),
      convertToLlm: createConvertToLlm(),
      systemPrompt: SYSTEM_PROMPT,
      tools,
    },
  }).start();
}

type Body = {
  model: string;
  stream: boolean;
  messages: Record<string, unknown>[];
  tools?: { type: string; function: { name: string } }[];
};

function body(index: number): Body {
  return server.requests[index]!.body as Body;
}

describe("a run on the OpenAI-compatible provider (local fake server)", () => {
  it("mention → tool call round → streamed answer: requests, chat and transcript agree", async () => {
    const calls: Record<string, unknown>[] = [];
    await start([weatherTool(calls)]);
    const answer = "It is sunny in Paris, 21°C. Enjoy the day!";
    server.chunkDelayMs = 2;
    server.enqueue(
      toolCallReply([{ id: "call_w1", name: "weather", arguments: { city: "Paris" } }], { fragmentSize: 5 }),
      textReply(answer, { pieceSize: 6 }),
    );
    const thread = h.thread();
    const edits: string[] = [];
    h.chat.subscribe((op) => {
      if ((op.op === "post" || op.op === "edit") && op.text !== undefined) edits.push(op.text);
    });
    const first = h.message(thread, "what's the weather in Paris?", { mentionsBot: true, author: bob });
    const result = await h.intake.submit(first);
    expect(result.kind).toBe("started");
    await h.runFinished((result as { runId: string }).runId);

    // What the server received.
    expect(server.requests).toHaveLength(2);
    expect(server.requests[0]!.headers.authorization).toBe("Bearer sk-e2e");
    expect(body(0)).toMatchObject({ model: "fake-model", stream: true });
    expect(body(0).tools?.map((t) => t.function.name)).toEqual(["weather"]);
    expect(body(0).messages).toEqual([
      { role: "system", content: SYSTEM_PROMPT },
      { role: "user", content: "Bob: what's the weather in Paris?" },
    ]);
    expect(body(1).messages).toEqual([
      { role: "system", content: SYSTEM_PROMPT },
      { role: "user", content: "Bob: what's the weather in Paris?" },
      {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: "call_w1", type: "function", function: { name: "weather", arguments: '{"city":"Paris"}' } },
        ],
      },
      { role: "tool", tool_call_id: "call_w1", content: "sunny, 21°C" },
    ]);
    expect(calls).toEqual([{ city: "Paris" }]);

    // What the chat shows: the progress line, the answer, the footer; the answer arrived in pieces.
    const texts = h.chat.texts(thread);
    expect(texts).toHaveLength(1);
    const shown = texts[0]!;
    expect(shown).toMatch(/^🔧 weather ✓ \d+\.\ds\n/);
    expect(shown).toContain(answer);
    expect(shown).toContain("2 turns · 1 tool call · 45 tokens");
    const partial = edits.filter((text) => text.includes("It is") && !text.includes(answer));
    expect(partial.length).toBeGreaterThan(0);
    expect(h.chat.status(thread)).toBeNull();

    // What Redis keeps.
    const transcript = await h.transcript(thread);
    expect(transcript.map((m) => (m as { role: string }).role)).toEqual([
      "user",
      "assistant",
      "toolResult",
      "assistant",
    ]);
    expect(transcript[0]).toMatchObject({ chatMessageId: first.id, authorId: bob.id, authorName: "Bob" });
    const call = transcript[1] as AssistantMessage;
    expect(call.content).toEqual([
      { type: "toolCall", id: "call_w1", name: "weather", arguments: { city: "Paris" } },
    ]);
    expect(call.stopReason).toBe("toolUse");
    expect(transcript[2]).toMatchObject({
      role: "toolResult",
      toolCallId: "call_w1",
      toolName: "weather",
      isError: false,
    } satisfies Partial<ToolResultMessage>);
    const final = transcript[3] as AssistantMessage;
    expect(final.content).toEqual([{ type: "text", text: answer }]);
    expect(final.stopReason).toBe("stop");
    expect(final.usage).toMatchObject({ input: 10, output: 5 });
    expect(await h.isActive(thread)).toBe(false);
  });

  it("a 429 from the server reaches the chat as one human line and the thread is released", async () => {
    await start();
    server.enqueue({
      kind: "error",
      status: 429,
      message: "Rate limit reached for requests",
      code: "rate_limit_exceeded",
    });
    const thread = h.thread();
    const runId = await h.mention(thread, "hello?", alice);
    await h.runFinished(runId);

    expect(server.requests).toHaveLength(1);
    const shown = h.chat.texts(thread).join("\n");
    expect(shown).toContain("⚠️ Rate limited by the model provider (429). Try again in a moment.");
    expect(shown).not.toMatch(/\bat .+:\d+:\d+/); // never a stack trace
    const transcript = await h.transcript(thread);
    const last = transcript.at(-1) as AssistantMessage;
    expect(last.stopReason).toBe("error");
    expect(await h.isActive(thread)).toBe(false);
    expect(await h.queue.getJobState(runId)).toBe("completed");
  });

  it("a stop during the model stream aborts the HTTP request: the server sees the client disconnect", async () => {
    await start();
    server.enqueue({
      ...textReply("Once upon a time there was a very long story", { pieceSize: 5 }),
      hangAfter: 3,
    });
    const thread = h.thread();
    const runId = await h.mention(thread, "tell me a long story", alice);
    await h.chat.waitFor((chat) => chat.texts(thread).some((text) => text.includes("Once")));
    expect(await h.intake.stop(thread, alice)).toEqual({ kind: "stopping", runId });
    await h.runFinished(runId);

    expect(await server.requests[0]!.outcome).toBe("client-disconnected");
    expect(server.requests).toHaveLength(1);
    const last = (await h.transcript(thread)).at(-1) as AssistantMessage;
    expect(last.stopReason).toBe("aborted");
    expect(last.content).toEqual([{ type: "text", text: "Once upon " }]); // the 2 pieces that arrived
    expect(h.chat.texts(thread).join("\n")).toContain("🛑 Stopped by Alice.");
    expect(await h.isActive(thread)).toBe(false);
  });
});
