import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { chunk, chunks, FakeOpenAIServer, textReply } from "../fakes/openai-server.js";
import { request } from "./helpers.js";

let server: FakeOpenAIServer;

beforeEach(async () => {
  server = await FakeOpenAIServer.start();
});

afterEach(async () => {
  await server.close();
});

const end = [chunks.finish("stop"), chunks.usage(10, 5)];

describe("content as typed parts (Mistral Magistral)", () => {
  it("thinking parts become thinking, text parts become the answer", async () => {
    // https://docs.mistral.ai/capabilities/reasoning/ and https://github.com/spring-projects/spring-ai/pull/5020:
    // magistral-medium streams `content: [{type:"thinking",thinking:[{type:"text",text}]}, {type:"text",text}]`.
    server.enqueue({
      kind: "stream",
      chunks: [
        chunks.role(),
        chunk({ content: [{ type: "thinking", thinking: [{ type: "text", text: "The user greets. " }] }] }),
        chunk({ content: [{ type: "thinking", thinking: [{ type: "text", text: "Reply kindly." }] }] }),
        chunk({ content: [{ type: "text", text: "Hello" }] }),
        chunk({ content: [{ type: "text", text: " there!" }] }),
        ...end,
      ],
    });
    const { message } = await request(server);
    expect(message.stopReason).toBe("stop");
    expect(message.content).toEqual([
      { type: "thinking", thinking: "The user greets. Reply kindly.", thinkingSignature: "thinking" },
      { type: "text", text: "Hello there!" },
    ]);
  });
});

describe("reasoning in other fields or inline", () => {
  it("OpenRouter reasoning_details without a reasoning string become thinking", async () => {
    // https://openrouter.ai/docs/use-cases/reasoning-tokens: `delta.reasoning_details` entries
    // `{type:"reasoning.text", text}` / `{type:"reasoning.summary", summary}`; encrypted entries have no text.
    server.enqueue({
      kind: "stream",
      chunks: [
        chunks.role(),
        chunk({
          reasoning_details: [{ type: "reasoning.text", text: "Step 1. ", format: "anthropic-claude-v1" }],
        }),
        chunk({ reasoning_details: [{ type: "reasoning.summary", summary: "Step 2." }] }),
        chunk({ reasoning_details: [{ type: "reasoning.encrypted", data: "gAAAA…" }] }),
        chunks.text("Done."),
        ...end,
      ],
    });
    const { message } = await request(server);
    expect(message.content).toEqual([
      { type: "thinking", thinking: "Step 1. Step 2.", thinkingSignature: "reasoning_details" },
      { type: "text", text: "Done." },
    ]);
  });

  it("OpenRouter's reasoning plus the same text in reasoning_details is read once", async () => {
    server.enqueue({
      kind: "stream",
      chunks: [
        chunks.role(),
        chunk({ reasoning: "Think.", reasoning_details: [{ type: "reasoning.text", text: "Think." }] }),
        chunks.text("Answer."),
        ...end,
      ],
    });
    const { message } = await request(server);
    expect(message.content[0]).toEqual({
      type: "thinking",
      thinking: "Think.",
      thinkingSignature: "reasoning",
    });
  });

  it("<think>…</think> in content (DeepSeek-R1 distills, Qwen3) becomes thinking, tags split across chunks", async () => {
    // https://console.groq.com/docs/reasoning: `reasoning_format: "raw"` (the default for
    // deepseek-r1-distill models) puts `<think>…</think>` inside `content`; Qwen3 on servers without a
    // reasoning parser does the same.
    server.enqueue({
      kind: "stream",
      chunks: [
        chunks.role(),
        chunks.text("<thi"),
        chunks.text("nk>\nThe user wants 2+2."),
        chunks.text(" It is 4.</th"),
        chunks.text("ink>\n\n2 + 2 = 4."),
        ...end,
      ],
    });
    const { message } = await request(server);
    expect(message.content).toEqual([
      { type: "thinking", thinking: "The user wants 2+2. It is 4.", thinkingSignature: "think_tag" },
      { type: "text", text: "2 + 2 = 4." },
    ]);
  });

  it("a tag later in the answer stays text; thinkTags: text keeps inline tags as the answer", async () => {
    server.enqueue(
      textReply("Use the <think> tag like this.", { pieceSize: 5 }),
      textReply("<think>literal</think> text", { pieceSize: 5 }),
    );
    const first = await request(server);
    expect(first.message.content).toEqual([{ type: "text", text: "Use the <think> tag like this." }]);
    const second = await request(server, { provider: { thinkTags: "text" } });
    expect(second.message.content).toEqual([{ type: "text", text: "<think>literal</think> text" }]);
  });
});

describe("usage as providers bill it", () => {
  it("xAI: reasoning tokens outside completion_tokens are added to the output", async () => {
    // https://github.com/vercel/ai/pull/12425 quoting https://docs.x.ai/docs/key-information/consumption-and-rate-limits:
    // "reasoning token consumption will be counted separately from completion_tokens, but will be counted in the total_tokens".
    server.enqueue({
      kind: "stream",
      chunks: [
        chunks.role(),
        chunks.text("4"),
        chunks.finish("stop"),
        {
          id: "x",
          object: "chat.completion.chunk",
          choices: [],
          usage: {
            prompt_tokens: 10120,
            completion_tokens: 1499,
            total_tokens: 14428,
            prompt_tokens_details: { cached_tokens: 128 },
            completion_tokens_details: { reasoning_tokens: 2809 },
          },
        },
      ],
    });
    const { message } = await request(server, {
      provider: { prices: { "fake-model": { input: 1, output: 10 } } },
    });
    expect(message.usage).toMatchObject({ input: 9992, cacheRead: 128, output: 4308, totalTokens: 14428 });
    expect(message.usage.cost.output).toBeCloseTo((4308 * 10) / 1_000_000, 10);
  });

  it("OpenAI: reasoning tokens already inside completion_tokens are not added twice", async () => {
    server.enqueue({
      kind: "stream",
      chunks: [
        chunks.role(),
        chunks.text("4"),
        chunks.finish("stop"),
        {
          id: "o",
          object: "chat.completion.chunk",
          choices: [],
          usage: {
            prompt_tokens: 20,
            completion_tokens: 500,
            total_tokens: 520,
            completion_tokens_details: { reasoning_tokens: 448 },
          },
        },
      ],
    });
    const { message } = await request(server);
    expect(message.usage).toMatchObject({ input: 20, output: 500, totalTokens: 520 });
  });

  it("Groq: usage only in x_groq.usage", async () => {
    // https://github.com/vercel/ai/issues/1651: the last chunk carries `x_groq: { id, usage: {…} }`.
    server.enqueue({
      kind: "stream",
      chunks: [
        chunks.role(),
        chunks.text("Hi"),
        {
          ...chunk({}, "stop"),
          x_groq: {
            id: "req_01",
            usage: { queue_time: 0.07, prompt_tokens: 23, completion_tokens: 19, total_tokens: 42 },
          },
        },
      ],
    });
    const { message } = await request(server, { provider: { includeUsage: false } });
    expect(message.usage).toMatchObject({ input: 23, output: 19, totalTokens: 42 });
  });
});
