import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ToolCall } from "../../src/agent/index.js";
import { chunk, chunks, FakeOpenAIServer } from "../fakes/openai-server.js";
import { request } from "./helpers.js";

let server: FakeOpenAIServer;

beforeEach(async () => {
  server = await FakeOpenAIServer.start();
});

afterEach(async () => {
  await server.close();
});

function calls(content: unknown[]): { id: string; name: string; arguments: unknown }[] {
  return (content as ToolCall[])
    .filter((block) => block.type === "toolCall")
    .map(({ id, name, arguments: args }) => ({ id, name, arguments: args }));
}

const finish = [chunks.finish("tool_calls"), chunks.usage(10, 5)];

describe("parallel tool calls in the shapes real servers stream", () => {
  it("Ollama ≥ 0.20: every call complete in one fragment, all with index 0 and their own id", async () => {
    // https://github.com/ollama/ollama/issues/15457 and https://github.com/vercel/ai/pull/14277:
    // `"tool_calls":[{"id":"abc123","index":0,"function":{"name":"file_write","arguments":"{…}"}}]` per call.
    server.enqueue({
      kind: "stream",
      chunks: [
        chunks.role(),
        chunks.toolCall(0, { id: "call_a1", name: "file_write", arguments: '{"filePath":"hello.py"}' }),
        chunks.toolCall(0, { id: "call_b2", name: "file_write", arguments: '{"filePath":"world.py"}' }),
        ...finish,
      ],
    });
    const { message } = await request(server);
    expect(message.stopReason).toBe("toolUse");
    expect(calls(message.content)).toEqual([
      { id: "call_a1", name: "file_write", arguments: { filePath: "hello.py" } },
      { id: "call_b2", name: "file_write", arguments: { filePath: "world.py" } },
    ]);
  });

  it("vLLM / SGLang: index 0 for every call, id and name on each call's first fragment only", async () => {
    // https://github.com/sgl-project/sglang/issues/7117 (Qwen3, parallel add/multiply) and
    // https://github.com/ai-dynamo/dynamo/pull/4723 (the same index-0 deltas from a vLLM-style parser).
    server.enqueue({
      kind: "stream",
      chunks: [
        chunks.role(),
        chunks.toolCall(0, { id: "chatcmpl-tool-1", name: "add", arguments: "" }),
        chunks.toolCall(0, { arguments: '{"a": 11, ' }),
        chunks.toolCall(0, { arguments: '"b": 49}' }),
        chunks.toolCall(0, { id: "chatcmpl-tool-2", name: "multiply", arguments: "" }),
        chunks.toolCall(0, { arguments: '{"a": 3, "b": 12}' }),
        ...finish,
      ],
    });
    const { message } = await request(server);
    expect(calls(message.content)).toEqual([
      { id: "chatcmpl-tool-1", name: "add", arguments: { a: 11, b: 49 } },
      { id: "chatcmpl-tool-2", name: "multiply", arguments: { a: 3, b: 12 } },
    ]);
  });

  it("a server that repeats the same id on every fragment keeps one call", async () => {
    // Mistral and Gemini's OpenAI layer repeat the call's id on later fragments.
    server.enqueue({
      kind: "stream",
      chunks: [
        chunks.role(),
        chunks.toolCall(0, { id: "c1", name: "search", arguments: '{"q":' }),
        chunks.toolCall(0, { id: "c1", arguments: '"cats"}' }),
        ...finish,
      ],
    });
    const { message } = await request(server);
    expect(calls(message.content)).toEqual([{ id: "c1", name: "search", arguments: { q: "cats" } }]);
  });

  it("index 0 without any ids: a second name after complete arguments starts a second call", async () => {
    // https://github.com/NousResearch/hermes-agent/pull/3468: Ollama-compatible endpoints whose names
    // and arguments were concatenated ("write_filewrite_file") when keyed by index alone.
    server.enqueue({
      kind: "stream",
      chunks: [
        chunks.role(),
        chunks.toolCall(0, { name: "write_file", arguments: '{"path":"alpha.txt"}' }),
        chunks.toolCall(0, { name: "write_file", arguments: '{"path":"beta.txt"}' }),
        ...finish,
      ],
    });
    const { message } = await request(server);
    const found = calls(message.content);
    expect(found.map((call) => call.arguments)).toEqual([{ path: "alpha.txt" }, { path: "beta.txt" }]);
    expect(found.map((call) => call.name)).toEqual(["write_file", "write_file"]);
    expect(new Set(found.map((call) => call.id)).size).toBe(2);
  });

  it("no index at all: fragments follow their id, id-less fragments the latest call", async () => {
    // https://github.com/ollama/ollama/issues/7881: Ollama before 0.4.7 sent tool calls without `index`.
    server.enqueue({
      kind: "stream",
      chunks: [
        chunks.role(),
        chunk({ tool_calls: [{ id: "x1", type: "function", function: { name: "a", arguments: '{"n":' } }] }),
        chunk({ tool_calls: [{ function: { arguments: "1}" } }] }),
        chunk({ tool_calls: [{ id: "x2", type: "function", function: { name: "b", arguments: "{}" } }] }),
        ...finish,
      ],
    });
    const { message } = await request(server);
    expect(calls(message.content)).toEqual([
      { id: "x1", name: "a", arguments: { n: 1 } },
      { id: "x2", name: "b", arguments: {} },
    ]);
  });

  it("indexes starting at 1, interleaved, and arguments before the name", async () => {
    // Some OpenAI-compatible proxies count from 1; Cerebras and others interleave parallel calls; a few
    // stream an argument fragment before the fragment naming the function.
    server.enqueue({
      kind: "stream",
      chunks: [
        chunks.role(),
        chunks.toolCall(1, { id: "p1", arguments: '{"city":' }),
        chunks.toolCall(2, { id: "p2", name: "time", arguments: '{"tz":' }),
        chunks.toolCall(1, { name: "weather", arguments: '"Oslo"}' }),
        chunks.toolCall(2, { arguments: '"UTC"}' }),
        ...finish,
      ],
    });
    const { message } = await request(server);
    expect(calls(message.content)).toEqual([
      { id: "p1", name: "weather", arguments: { city: "Oslo" } },
      { id: "p2", name: "time", arguments: { tz: "UTC" } },
    ]);
  });
});
