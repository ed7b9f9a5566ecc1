import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { formatLimit } from "../../src/llm/index.js";
import { cutNote } from "../../src/llm/openai/index.js";
import { STREAM_CLOSED_MESSAGE } from "../../src/llm/provider-errors.js";
import { chunks, FakeOpenAIServer, split, textReply } from "../fakes/openai-server.js";
import { fakeModel, request } from "./helpers.js";

let server: FakeOpenAIServer;

beforeEach(async () => {
  server = await FakeOpenAIServer.start();
});

afterEach(async () => {
  await server.close();
});

describe("how a stream ends", () => {
  it("closed without finish_reason and without [DONE] (proxy timeout, restart): an error, partial kept", async () => {
    // https://github.com/BerriAI/litellm/pull/33222: upstream resets surfaced as empty or truncated
    // 200 streams; the body simply ends.
    server.enqueue({ kind: "stream", chunks: [chunks.role(), chunks.text("Half an ans")], done: false });
    const { message, types } = await request(server);
    expect(message.stopReason).toBe("error");
    expect(message.errorMessage).toBe(STREAM_CLOSED_MESSAGE);
    expect(message.content).toEqual([{ type: "text", text: "Half an ans" }]);
    expect(types.at(-1)).toBe("error");
  });

  it("[DONE] without finish_reason is a complete answer", async () => {
    server.enqueue({ kind: "stream", chunks: [chunks.role(), chunks.text("Whole.")] });
    const { message } = await request(server);
    expect(message.stopReason).toBe("stop");
  });

  it("a 200 JSON body where SSE was asked for (a proxy) is read as a complete answer", async () => {
    server.enqueue({
      kind: "json",
      body: {
        id: "chatcmpl-json",
        object: "chat.completion",
        model: "fake-model",
        choices: [
          {
            index: 0,
            finish_reason: "tool_calls",
            message: {
              role: "assistant",
              content: "Checking.",
              tool_calls: [
                { id: "j1", type: "function", function: { name: "a", arguments: '{"x":1}' } },
                { id: "j2", type: "function", function: { name: "b", arguments: '{"y":2}' } },
              ],
            },
          },
        ],
        usage: { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 },
      },
    });
    const { message } = await request(server);
    expect(message.stopReason).toBe("toolUse");
    expect(message.content).toEqual([
      { type: "text", text: "Checking." },
      { type: "toolCall", id: "j1", name: "a", arguments: { x: 1 } },
      { type: "toolCall", id: "j2", name: "b", arguments: { y: 2 } },
    ]);
    expect(message.usage).toMatchObject({ input: 7, output: 3 });
  });
});

describe("idle and header timeouts", () => {
  it("SSE keep-alive comments keep a slow stream alive past the idle timeout", async () => {
    // https://openrouter.ai/docs/api_reference/streaming: OpenRouter sends `: OPENROUTER PROCESSING`
    // comments while the model works; https://api-docs.deepseek.com/quick_start/rate_limit: DeepSeek sends
    // `: keep-alive` comments under load.
    const comment = (text: string) => ({ raw: `: ${text}\n\n` });
    server.enqueue({
      kind: "stream",
      chunks: [
        chunks.role(),
        { waitMs: 150 },
        comment("OPENROUTER PROCESSING"),
        { waitMs: 150 },
        comment("OPENROUTER PROCESSING"),
        { waitMs: 150 },
        comment("keep-alive"),
        { waitMs: 150 },
        chunks.text("Finally."),
        ...[chunks.finish("stop")],
      ],
    });
    const { message } = await request(server, { provider: { idleTimeoutMs: 400 } });
    expect(message.errorMessage).toBeUndefined();
    expect(message.content).toEqual([{ type: "text", text: "Finally." }]);
  });

  it("a stream that stalls after its headers ends with a message naming the idle limit", async () => {
    server.enqueue({
      kind: "stream",
      chunks: [chunks.role(), chunks.text("Hm"), chunks.text("m")],
      hangAfter: 2,
    });
    const { message } = await request(server, { provider: { idleTimeoutMs: 250 } });
    expect(message.errorMessage).toBe(
      `No data from the model server at ${server.baseURL} for 250 ms; the answer was abandoned.`,
    );
    expect(message.content).toEqual([{ type: "text", text: "Hm" }]);
  });

  it("limits are printed exactly", () => {
    expect([
      formatLimit(250),
      formatLimit(1500),
      formatLimit(120_000),
      formatLimit(90_000),
      formatLimit(600_000),
    ]).toEqual(["250 ms", "1.5 s", "2 min", "90 s", "10 min"]);
  });
});

describe("keep-alive against a server that closes after each streamed response (llama-server)", () => {
  it("every request succeeds without retries", async () => {
    // llama.cpp's cpp-httplib closes after a streamed response while sending `Connection: keep-alive`
    // (https://github.com/takeshy/obsidian-local-llm-hub/issues/32); Node's http.Agent then reused the dead socket.
    server.closeAfterStream = true;
    for (let i = 0; i < 5; i++) server.enqueue(textReply(`answer ${i}`));
    const results: string[] = [];
    const { createOpenAIStreamFn } = await import("../../src/llm/index.js");
    const streamFn = createOpenAIStreamFn({ maxRetries: 0 });
    for (let i = 0; i < 5; i++) {
      const stream = await streamFn(fakeModel(server), { systemPrompt: "", messages: [] }, {});
      const message = await stream.result();
      results.push(message.errorMessage ?? message.stopReason);
    }
    expect(results).toEqual(["stop", "stop", "stop", "stop", "stop"]);
    expect(server.requests).toHaveLength(5);
  });
});

describe("output caps (issue 12)", () => {
  it("an endless answer is cut at maxOutputChars: stopReason length, a note, the request is stopped", async () => {
    server.enqueue({
      kind: "stream",
      chunks: [chunks.role(), ...split("x".repeat(400), 10).map(chunks.text), chunks.finish("stop")],
      delayMs: 1,
    });
    const { message } = await request(server, { provider: { maxOutputChars: 100 } });
    expect(message.stopReason).toBe("length");
    const text = message.content[0]?.type === "text" ? message.content[0].text : "";
    expect(text.endsWith(cutNote(100))).toBe(true);
    expect(text.length).toBeLessThan(100 + cutNote(100).length + 20);
    await expect(server.requests[0]?.outcome).resolves.toBe("client-disconnected");
  });

  it("a whole-body JSON answer is held to maxOutputChars too", async () => {
    server.enqueue({
      kind: "json",
      body: {
        id: "chatcmpl-huge",
        object: "chat.completion",
        model: "fake-model",
        choices: [
          { index: 0, finish_reason: "stop", message: { role: "assistant", content: "y".repeat(5000) } },
        ],
      },
    });
    const { message } = await request(server, { provider: { maxOutputChars: 100 } });
    expect(message.stopReason).toBe("length");
    const text = message.content[0]?.type === "text" ? message.content[0].text : "";
    expect(text.endsWith(cutNote(100))).toBe(true);
    expect(text.length).toBeLessThan(100 + cutNote(100).length + 20);
  });

  it("sends a default max_tokens: a quarter of the context window, at most the model's maxTokens", async () => {
    server.enqueue(textReply("a"), textReply("b"), textReply("c"));
    await request(server, { model: fakeModel(server, { contextWindow: 4096 }) });
    await request(server, { model: fakeModel(server, { contextWindow: 200_000, maxTokens: 8192 }) });
    await request(server, { provider: { maxTokens: null } });
    const bodies = server.requests.map((received) => received.body as Record<string, unknown>);
    expect(bodies.map((body) => body.max_tokens)).toEqual([1024, 8192, undefined]);
  });
});
