import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { createOpenAIStreamFn } from "../../src/llm/index.js";
import { chunk, chunks, FakeOpenAIServer, textReply, toolCallReply } from "../fakes/openai-server.js";
import { drain, fakeModel, request, user } from "./helpers.js";

let server: FakeOpenAIServer;

beforeEach(async () => {
  server = await FakeOpenAIServer.start();
});

afterEach(async () => {
  await server.close();
});

describe("openai stream function: events", () => {
  it("streams text as start, text_start, text_delta…, text_end, done with usage and response ids", async () => {
    server.enqueue(textReply("Hello, world!", { pieceSize: 5, usage: [12, 4] }));
    const { events, types, message } = await request(server);

    expect(types).toEqual([
      "start",
      "text_start",
      "text_delta",
      "text_delta",
      "text_delta",
      "text_end",
      "done",
    ]);
    const deltas = events.flatMap((event) => (event.type === "text_delta" ? [event.delta] : []));
    expect(deltas).toEqual(["Hello", ", wor", "ld!"]);
    const end = events.find((event) => event.type === "text_end");
    expect(end).toMatchObject({ contentIndex: 0, content: "Hello, world!" });
    expect(message).toMatchObject({
      role: "assistant",
      content: [{ type: "text", text: "Hello, world!" }],
      api: "openai-completions",
      provider: "openai",
      model: "fake-model",
      responseModel: "fake-model",
      stopReason: "stop",
      usage: { input: 12, output: 4, cacheRead: 0, cacheWrite: 0, totalTokens: 16 },
    });
    expect(message.responseId).toMatch(/^chatcmpl-fake-/);
    expect(message.errorMessage).toBeUndefined();
    // Every event carries the same live partial, which is the final message.
    for (const event of events) {
      const partial =
        event.type === "done" ? event.message : event.type === "error" ? event.error : event.partial;
      expect(partial).toBe(message);
    }
  });

  it("keeps the partial current: each text_delta sees the text so far", async () => {
    // One chunk per network read, as a model generating tokens sends them: the consumer runs between.
    server.enqueue({ ...textReply("abcdefgh", { pieceSize: 3 }), delayMs: 20 });
    const streamFn = createOpenAIStreamFn({ maxRetries: 0 });
    const stream = await streamFn(fakeModel(server), { systemPrompt: "", messages: [user("hi")] }, {});
    const seen: string[] = [];
    for await (const event of stream) {
      if (event.type === "text_delta") {
        const block = event.partial.content[event.contentIndex];
        seen.push(block?.type === "text" ? block.text : "?");
      }
    }
    expect(seen).toEqual(["abc", "abcdef", "abcdefgh"]);
  });

  it("maps usage with cached input and prices per million tokens to cost", async () => {
    server.enqueue({
      kind: "stream",
      chunks: [chunks.role(), chunks.text("ok"), chunks.finish("stop"), chunks.usage(1_000, 500, 400)],
    });
    const { message } = await request(server, {
      provider: { prices: { "fake-model": { input: 2, output: 8, cacheRead: 0.5 } } },
    });
    expect(message.usage).toEqual({
      input: 600,
      output: 500,
      cacheRead: 400,
      cacheWrite: 0,
      totalTokens: 1_500,
      cost: { input: 0.0012, output: 0.004, cacheRead: 0.0002, cacheWrite: 0, total: expect.any(Number) },
    });
    expect(message.usage.cost.total).toBeCloseTo(0.0054, 12);
  });

  it("takes prices from model.cost when the provider options have none", async () => {
    server.enqueue(textReply("ok", { usage: [1_000_000, 1_000_000] }));
    const { message } = await request(server, {
      model: fakeModel(server, { cost: { input: 1, output: 3 } }),
    });
    expect(message.usage.cost.total).toBeCloseTo(4, 10);
  });

  for (const field of ["reasoning_content", "reasoning", "reasoning_text"] as const) {
    it(`turns ${field} deltas into a thinking block before the text`, async () => {
      server.enqueue({
        kind: "stream",
        chunks: [
          chunks.role(),
          chunks.reasoning("Let me ", field),
          chunks.reasoning("think.", field),
          chunks.text("Answer"),
          chunks.finish("stop"),
        ],
      });
      const { types, message } = await request(server);
      expect(types).toEqual([
        "start",
        "thinking_start",
        "thinking_delta",
        "thinking_delta",
        "text_start",
        "text_delta",
        "thinking_end",
        "text_end",
        "done",
      ]);
      expect(message.content).toEqual([
        { type: "thinking", thinking: "Let me think.", thinkingSignature: field },
        { type: "text", text: "Answer" },
      ]);
    });
  }

  it("uses only the first non-empty reasoning field of a delta", async () => {
    server.enqueue({
      kind: "stream",
      chunks: [
        chunk({ reasoning_content: "", reasoning: "R1", reasoning_text: "R2" }),
        chunks.finish("stop"),
      ],
    });
    const { message } = await request(server);
    expect(message.content).toEqual([{ type: "thinking", thinking: "R1", thinkingSignature: "reasoning" }]);
  });
});

describe("openai stream function: finish_reason mapping", () => {
  const cases: [string | null, string, string | undefined][] = [
    ["stop", "stop", undefined],
    [null, "stop", undefined],
    ["length", "length", undefined],
    ["tool_calls", "toolUse", undefined],
    ["function_call", "toolUse", undefined],
    [
      "content_filter",
      "error",
      "The model provider's content filter stopped the answer (finish_reason: content_filter).",
    ],
    ["mystery", "error", 'The model provider ended the answer with an unexpected finish_reason "mystery".'],
  ];
  for (const [reason, stopReason, errorMessage] of cases) {
    it(`maps ${String(reason)} to ${stopReason}`, async () => {
      server.enqueue({
        kind: "stream",
        chunks: [chunks.role(), chunks.text("partial"), chunks.finish(reason)],
      });
      const { types, message } = await request(server);
      expect(message.stopReason).toBe(stopReason);
      expect(message.errorMessage).toBe(errorMessage);
      expect(types.at(-1)).toBe(errorMessage ? "error" : "done");
      // The text block is closed either way (the stream itself completed).
      expect(types).toContain("text_end");
      expect(message.content).toEqual([{ type: "text", text: "partial" }]);
    });
  }

  it("reports toolUse when a server says stop but returned tool calls", async () => {
    server.enqueue(toolCallReply([{ id: "c", name: "t", arguments: {} }], { finishReason: "stop" }));
    const { message } = await request(server);
    expect(message.stopReason).toBe("toolUse");
  });

  it("keeps length when a truncated answer has tool calls", async () => {
    server.enqueue(
      toolCallReply([{ id: "c", name: "t", arguments: '{"a": "tru' }], { finishReason: "length" }),
    );
    const { message } = await request(server);
    expect(message.stopReason).toBe("length");
    expect(message.content).toEqual([{ type: "toolCall", id: "c", name: "t", arguments: { a: "tru" } }]);
  });
});

describe("openai stream function: the request", () => {
  const tool = {
    name: "lookup",
    description: "Look something up",
    parameters: z.object({ query: z.string().describe("what to find"), limit: z.number().int().default(5) }),
  };

  it("sends model, system prompt, messages, tools, usage option, sampling options and reasoning effort", async () => {
    server.enqueue(textReply("ok"));
    await request(server, {
      model: fakeModel(server, { reasoning: true }),
      provider: { temperature: 0.2, maxTokens: 100, reasoning: "low" },
      stream: { temperature: 0.7, reasoning: "high" },
      context: { systemPrompt: "You are terse.", messages: [user("hi")], tools: [tool] },
    });
    expect(server.requests).toHaveLength(1);
    const received = server.requests[0]!;
    expect(received.method).toBe("POST");
    expect(received.path).toBe("/chat/completions");
    expect(received.body).toEqual({
      model: "fake-model",
      stream: true,
      stream_options: { include_usage: true },
      temperature: 0.7,
      max_tokens: 100,
      reasoning_effort: "high",
      messages: [
        { role: "system", content: "You are terse." },
        { role: "user", content: "hi" },
      ],
      tools: [
        {
          type: "function",
          function: {
            name: "lookup",
            description: "Look something up",
            parameters: {
              type: "object",
              properties: {
                query: { type: "string", description: "what to find" },
                limit: {
                  type: "integer",
                  default: 5,
                  minimum: expect.any(Number),
                  maximum: expect.any(Number),
                },
              },
              required: ["query"],
            },
          },
        },
      ],
    });
  });

  it("omits reasoning_effort for a model with reasoning: false, and stream_options when disabled", async () => {
    server.enqueue(textReply("ok"));
    await request(server, {
      model: fakeModel(server, { reasoning: false }),
      provider: { includeUsage: false },
      stream: { reasoning: "high" },
    });
    const body = server.requests[0]?.body as Record<string, unknown>;
    expect(body).not.toHaveProperty("reasoning_effort");
    expect(body).not.toHaveProperty("stream_options");
    expect(body).not.toHaveProperty("tools");
  });

  it("authenticates with the per-request key, else the configured key, else sends no Authorization", async () => {
    server.enqueue(textReply("1"), textReply("2"), textReply("3"));
    const streamFn = createOpenAIStreamFn({ apiKey: "sk-configured", maxRetries: 0 });
    const context = { systemPrompt: "", messages: [user("hi")] };
    await drain(await streamFn(fakeModel(server), context, { apiKey: "sk-per-request" }));
    await drain(await streamFn(fakeModel(server), context, {}));
    await drain(await createOpenAIStreamFn({ maxRetries: 0 })(fakeModel(server), context, {}));
    expect(server.requests.map((received) => received.headers.authorization)).toEqual([
      "Bearer sk-per-request",
      "Bearer sk-configured",
      undefined,
    ]);
    // Different keys share one client and its pool; the second stream fn has its own pool.
    expect(server.connections).toBeLessThanOrEqual(3);
  });

  it("sends provider, model and request headers", async () => {
    server.enqueue(textReply("ok"));
    await request(server, {
      provider: { headers: { "x-provider": "p", "x-shared": "provider" } },
      model: fakeModel(server, { headers: { "x-model": "m", "x-shared": "model" } }),
      stream: { headers: { "x-request": "r" } },
    });
    const headers = server.requests[0]?.headers ?? {};
    expect(headers["x-provider"]).toBe("p");
    expect(headers["x-model"]).toBe("m");
    expect(headers["x-request"]).toBe("r");
    expect(headers["x-shared"]).toBe("model");
  });

  it("reuses one kept-alive connection for sequential requests", async () => {
    server.enqueue(textReply("1"), textReply("2"), textReply("3"));
    const streamFn = createOpenAIStreamFn({ maxRetries: 0 });
    for (let i = 0; i < 3; i++) {
      const { message } = await drain(
        await streamFn(fakeModel(server), { systemPrompt: "", messages: [user(`${i}`)] }, {}),
      );
      expect(message.stopReason).toBe("stop");
    }
    expect(server.requests).toHaveLength(3);
    // undici opens a second socket for the request right after the first response, then reuses both.
    expect(server.connections).toBeLessThanOrEqual(2);
  });
});
