import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import {
  Agent,
  type AgentTool,
  type AssistantMessage,
  type LlmContext,
  type Message,
  type Model,
  type ToolResultMessage,
} from "../../src/agent/index.js";
import {
  createConvertToLlm,
  createOpenAIStreamFn,
  type OpenAIProviderOptions,
  openAIModel,
} from "../../src/llm/index.js";
import { buildChatRequest, OpenAIMessageCache } from "../../src/llm/openai/index.js";
import { emptyUsage } from "../../src/llm/usage.js";
import { FakeOpenAIServer, textReply, toolCallReply } from "../fakes/openai-server.js";
import { drain } from "./helpers.js";

let server: FakeOpenAIServer;

beforeEach(async () => {
  server = await FakeOpenAIServer.start();
});

afterEach(async () => {
  await server.close();
});

const image = { type: "image" as const, data: "iVBORw0KGgo=", mimeType: "image/png" };

function assistant(
  content: AssistantMessage["content"],
  extra: Partial<AssistantMessage> = {},
): AssistantMessage {
  return {
    role: "assistant",
    content,
    api: "openai-completions",
    provider: "openai",
    model: "m",
    usage: emptyUsage(),
    stopReason: "stop",
    timestamp: 0,
    ...extra,
  };
}

function result(toolCallId: string, content: ToolResultMessage["content"]): ToolResultMessage {
  return { role: "toolResult", toolCallId, toolName: "t", content, isError: false, timestamp: 0 };
}

/** Every case messages.ts handles, with text that JSON must escape. */
function edgeTranscript(): Message[] {
  return [
    { role: "user", content: 'Ana: "quotes", a\nnewline, a tab\t, \u2028 and 🙂', timestamp: 0 },
    {
      role: "user",
      content: [
        { type: "text", text: "two" },
        { type: "text", text: "text blocks" },
      ],
      timestamp: 0,
    },
    { role: "user", content: [{ type: "text", text: "look:" }, image], timestamp: 0 },
    assistant(
      [
        { type: "thinking", thinking: "first, ", thinkingSignature: "reasoning" },
        { type: "thinking", thinking: "hidden", redacted: true },
        { type: "thinking", thinking: "then read" },
        { type: "text", text: "Reading." },
        { type: "toolCall", id: "call_1", name: "read", arguments: { path: "a.txt", n: [1, 2] } },
        { type: "toolCall", id: "call_2", name: "stat", arguments: {} },
        { type: "toolCall", id: "call_3", name: "list", arguments: { deep: true } },
      ],
      { stopReason: "toolUse" },
    ),
    result("call_2", []),
    result("call_x", [{ type: "text", text: "an orphan: dropped" }]),
    result("call_1", [{ type: "text", text: "alpha" }, image]),
    // call_3 has no result: a "No result provided" tool message, then the tool images.
    assistant([{ type: "text", text: "half an answ" }], { stopReason: "error", errorMessage: "boom" }),
    assistant([{ type: "text", text: "stopped" }], { stopReason: "aborted" }),
    assistant([{ type: "thinking", thinking: "only thoughts", thinkingSignature: "reasoning_text" }]),
    assistant([]),
    { role: "user", content: "and now?", timestamp: 0 },
    assistant(
      [
        { type: "text", text: "I was writ" },
        { type: "toolCall", id: "call_4", name: "read", arguments: { path: "b" } },
      ],
      { stopReason: "aborted", interrupted: { by: "Bo" } },
    ),
    result("call_4", [{ type: "text", text: "Operation aborted" }]),
    assistant([{ type: "thinking", thinking: "   " }], { stopReason: "aborted", interrupted: {} }),
    { role: "user", content: "Bo: go on", timestamp: 0 },
    assistant(
      [
        { type: "thinking", thinking: "plan", thinkingSignature: "reasoning_content" },
        { type: "text", text: "Done." },
      ],
      { stopReason: "stop" },
    ),
  ];
}

const tool: AgentTool<z.ZodObject<{ path: z.ZodString }>> = {
  name: "read",
  description: "Read a file",
  parameters: z.object({ path: z.string() }),
  execute: async () => ({ content: [{ type: "text", text: "" }], details: {} }),
};

/** What today's uncached request body is, as the server parses it. */
function reference(model: Model, context: LlmContext, provider: OpenAIProviderOptions): unknown {
  return JSON.parse(JSON.stringify(buildChatRequest(model, context, {}, provider)));
}

describe("the per-message request cache", () => {
  const withImages = () => openAIModel({ id: "fake-model", baseUrl: server.baseURL });
  const textOnly = () => openAIModel({ id: "fake-model", baseUrl: server.baseURL, input: ["text"] });

  it("sends the same body as the uncached conversion, in every variant, cold and warm", async () => {
    const messages = edgeTranscript();
    const cache = new OpenAIMessageCache();
    const cases: { model: Model; provider: OpenAIProviderOptions; systemPrompt: string }[] = [
      { model: withImages(), provider: {}, systemPrompt: "Be brief." },
      { model: textOnly(), provider: {}, systemPrompt: "" },
      {
        model: withImages(),
        provider: { replayReasoning: true, systemRole: "developer", temperature: 0.2 },
        systemPrompt: 'A "system"\nprompt',
      },
      { model: withImages(), provider: { supportsImages: false, replayReasoning: true }, systemPrompt: "S" },
      {
        model: textOnly(),
        provider: {
          extraBody: { messages: "not these", top_k: 40, temperature: 0.9, stream: false },
          includeUsage: false,
          maxTokens: null,
          reasoning: "high",
        },
        systemPrompt: "S",
      },
    ];
    const expected: unknown[] = [];
    for (const { model, provider, systemPrompt } of cases) {
      const context: LlmContext = { systemPrompt, messages, tools: [tool] };
      const streamFn = createOpenAIStreamFn({
        apiKey: "sk-test",
        maxRetries: 0,
        messageCache: cache,
        ...provider,
      });
      for (let round = 0; round < 2; round++) {
        server.enqueue(textReply("ok"));
        const { message } = await drain(await streamFn(model, context, {}));
        expect(message.stopReason).toBe("stop");
        expected.push(reference(model, context, provider));
      }
    }
    expect(server.requests.map((request) => request.body)).toEqual(expected);
    // Through the SDK as before: JSON, auth, the SDK's own headers.
    for (const request of server.requests) {
      expect(request.headers["content-type"]).toBe("application/json");
      expect(request.headers.authorization).toBe("Bearer sk-test");
      expect(request.headers["x-stainless-retry-count"]).toBe("0");
    }
    // The variants that render differently were converted apart; the second round of each reused all.
    expect(cache.reused).toBeGreaterThan(0);
    const first = server.requests[0]?.body as { messages: { role: string; tool_call_id?: string }[] };
    expect(first.messages.map((m) => m.tool_call_id ?? m.role)).toEqual([
      "system",
      "user",
      "user",
      "user",
      "assistant",
      "call_2",
      "call_1",
      "call_3",
      "user",
      "user",
      "assistant",
      "user",
      "assistant",
    ]);
  });

  it("a transcript that grows, changes in the middle, shrinks or changes variant gets the uncached body", async () => {
    const u1: Message = { role: "user", content: "read both", timestamp: 0 };
    const a1 = assistant(
      [
        { type: "toolCall", id: "t1", name: "read", arguments: { path: "a" } },
        { type: "toolCall", id: "t2", name: "read", arguments: { path: "b" } },
      ],
      { stopReason: "toolUse" },
    );
    const r1 = result("t1", [{ type: "text", text: "alpha" }, image]);
    const r2 = result("t2", [image]);
    const failed = assistant([{ type: "text", text: "x" }], { stopReason: "error" });
    const u2: Message = { role: "user", content: "and?", timestamp: 0 };
    const a3 = assistant([{ type: "toolCall", id: "t3", name: "read", arguments: {} }], {
      stopReason: "toolUse",
    });
    const summary: Message = { role: "user", content: "[summary] read a and b", timestamp: 0 };
    const steps: { messages: Message[]; model: Model }[] = [
      { messages: [u1], model: withImages() },
      // Open calls at the end: "No result provided" for both, then for one with the images after it.
      { messages: [u1, a1], model: withImages() },
      { messages: [u1, a1, r1], model: withImages() },
      { messages: [u1, a1, r1, r2], model: withImages() },
      { messages: [u1, a1, r1, r2, failed, u2], model: withImages() },
      // As long as the last one, the same first message, a different middle.
      { messages: [u1, a1, r2, r1, failed, summary, u2], model: withImages() },
      { messages: [summary, u2], model: withImages() },
      { messages: [u1, a1, r1], model: withImages() },
      { messages: [u1, a1, r1, r2, failed, u2], model: textOnly() },
      { messages: [u1, a1, r1, r2, failed, u2, a3], model: withImages() },
      { messages: [u1, a1, r1, r2, failed, u2, a3, result("t3", [])], model: withImages() },
    ];
    const cache = new OpenAIMessageCache();
    const streamFn = createOpenAIStreamFn({ apiKey: "sk-test", maxRetries: 0, messageCache: cache });
    const expected: unknown[] = [];
    const converted: number[] = [];
    for (const { messages, model } of steps) {
      const context: LlmContext = { systemPrompt: "S", messages };
      server.enqueue(textReply("ok"));
      await drain(await streamFn(model, context, {}));
      expected.push(reference(model, context, {}));
      converted.push(cache.converted);
    }
    expect(server.requests.map((request) => request.body)).toEqual(expected);
    // Each message is converted once per variant: u1, a1, r1, r2, failed + u2, summary, then the six
    // again text-only, then a3, then the last result.
    expect(converted).toEqual([1, 2, 3, 4, 6, 7, 7, 7, 13, 14, 15]);
  });

  it("a run's later requests convert only the messages added since the previous one", async () => {
    const cache = new OpenAIMessageCache();
    const agent = new Agent({
      initialState: {
        systemPrompt: "You read files.",
        model: openAIModel({ id: "fake-model", baseUrl: server.baseURL }),
        tools: [tool],
      },
      streamFn: createOpenAIStreamFn({ apiKey: "sk-test", maxRetries: 0, messageCache: cache }),
      convertToLlm: createConvertToLlm(),
    });
    const counts: [number, number][] = [];
    const note = () => counts.push([cache.converted, cache.reused]);
    server.enqueue(
      toolCallReply([{ id: "c1", name: "read", arguments: { path: "a" } }]),
      toolCallReply([{ id: "c2", name: "read", arguments: { path: "b" } }]),
      textReply("Both read."),
      textReply("Again."),
    );
    agent.subscribe((event) => {
      if (event.type === "message_start" && event.message.role === "assistant") note();
    });

    await agent.prompt("Read a and b");
    await agent.prompt("Once more");

    expect(server.requests).toHaveLength(4);
    // [converted, reused] when each request had been built: 1 user; + answer and result; + answer and
    // result; then the next run's request: + answer and the new prompt, the other 6 reused.
    expect(counts).toEqual([
      [1, 0],
      [3, 1],
      [5, 4],
      [7, 9],
    ]);
    // What the model saw is the uncached conversion of the transcript.
    const last = server.requests[3]?.body;
    const context: LlmContext = {
      systemPrompt: "You read files.",
      messages: agent.state.messages.slice(0, -1) as Message[],
      tools: [tool],
    };
    expect(last).toEqual(reference(agent.state.model, context, {}));
  });
});
