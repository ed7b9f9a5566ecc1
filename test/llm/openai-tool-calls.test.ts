import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { AssistantMessageEvent, ToolCall } from "../../src/agent/index.js";
import { createOpenAIStreamFn } from "../../src/llm/index.js";
import { parseStreamingJson } from "../../src/llm/streaming-json.js";
import { chunk, chunks, FakeOpenAIServer, toolCallReply } from "../fakes/openai-server.js";
import { fakeModel, request, user } from "./helpers.js";

let server: FakeOpenAIServer;

beforeEach(async () => {
  server = await FakeOpenAIServer.start();
});

afterEach(async () => {
  await server.close();
});

describe("openai stream function: tool calls", () => {
  const first = { path: '/tmp/ünïcode "quoted" file.txt', lines: [1, 2, 3], options: { recursive: true } };
  const second = { query: "a\\b\nnext line", limit: 10, nothing: null };

  it("parses arguments split anywhere across chunks and interleaved indexes; arguments are current at each delta", async () => {
    server.enqueue(
      toolCallReply(
        [
          { id: "call_A", name: "read_file", arguments: first },
          { id: "call_B", name: "search", arguments: second },
        ],
        { fragmentSize: 3, interleave: true },
      ),
    );
    // One chunk per network read, as a model generating tokens sends them: the consumer runs between.
    server.chunkDelayMs = 2;
    const streamFn = createOpenAIStreamFn({ maxRetries: 0 });
    const stream = await streamFn(fakeModel(server), { systemPrompt: "", messages: [user("go")] }, {});
    const buffers = new Map<number, string>();
    const events: AssistantMessageEvent[] = [];
    let deltas = 0;
    for await (const event of stream) {
      events.push(event);
      if (event.type !== "toolcall_delta") continue;
      deltas++;
      const buffer = (buffers.get(event.contentIndex) ?? "") + event.delta;
      buffers.set(event.contentIndex, buffer);
      const block = event.partial.content[event.contentIndex] as ToolCall;
      expect(block.type).toBe("toolCall");
      expect(typeof block.arguments).toBe("object");
      expect(Array.isArray(block.arguments)).toBe(false);
      expect(block.arguments).toEqual(parseStreamingJson(buffer));
    }
    const message = await stream.result();
    expect(deltas).toBeGreaterThan(20);
    expect(message.stopReason).toBe("toolUse");
    expect(message.content).toEqual([
      { type: "toolCall", id: "call_A", name: "read_file", arguments: first },
      { type: "toolCall", id: "call_B", name: "search", arguments: second },
    ]);
    expect(JSON.parse(buffers.get(0) ?? "")).toEqual(first);
    expect(JSON.parse(buffers.get(1) ?? "")).toEqual(second);
    const types = events.map((event) => event.type);
    expect(types.slice(0, 3)).toEqual(["start", "toolcall_start", "toolcall_start"]);
    expect(types.slice(-3)).toEqual(["toolcall_end", "toolcall_end", "done"]);
    const ends = events.filter((event) => event.type === "toolcall_end");
    expect(ends.map((event) => event.contentIndex)).toEqual([0, 1]);
    expect(ends[1]).toMatchObject({ toolCall: { id: "call_B", arguments: second } });
    // The final arguments are plain data, not the streaming accessor.
    const descriptor = Object.getOwnPropertyDescriptor(message.content[0], "arguments");
    expect(descriptor?.get).toBeUndefined();
    expect(descriptor?.value).toEqual(first);
  });

  it("shows partial strings while streaming (salvage parsing)", async () => {
    server.enqueue({
      kind: "stream",
      chunks: [
        chunks.toolCall(0, { id: "c1", name: "write", arguments: '{"text": "Hel' }),
        chunks.toolCall(0, { arguments: 'lo", "n": 4' }),
        chunks.toolCall(0, { arguments: "2}" }),
        chunks.finish("tool_calls"),
      ],
      // One chunk per network read, as a model generating tokens sends them: the consumer runs between.
      delayMs: 20,
    });
    const streamFn = createOpenAIStreamFn({ maxRetries: 0 });
    const stream = await streamFn(fakeModel(server), { systemPrompt: "", messages: [user("go")] }, {});
    const snapshots: unknown[] = [];
    for await (const event of stream) {
      if (event.type === "toolcall_delta") {
        snapshots.push(structuredClone((event.partial.content[event.contentIndex] as ToolCall).arguments));
      }
    }
    expect(snapshots).toEqual([{ text: "Hel" }, { text: "Hello", n: 4 }, { text: "Hello", n: 42 }]);
  });

  it("generates stable, distinct ids when the server sends none", async () => {
    server.enqueue(
      toolCallReply(
        [
          { name: "a", arguments: { x: 1 } },
          { name: "b", arguments: { y: 2 } },
        ],
        { interleave: true },
      ),
    );
    const streamFn = createOpenAIStreamFn({ maxRetries: 0 });
    const stream = await streamFn(fakeModel(server), { systemPrompt: "", messages: [user("go")] }, {});
    const idsAtStart: string[] = [];
    for await (const event of stream) {
      if (event.type === "toolcall_start")
        idsAtStart.push((event.partial.content[event.contentIndex] as ToolCall).id);
    }
    const message = await stream.result();
    const ids = message.content.map((block) => (block as ToolCall).id);
    expect(ids).toEqual(idsAtStart);
    expect(ids[0]).toMatch(/^call_\w+_0$/);
    expect(new Set(ids).size).toBe(2);
  });

  it("tolerates ids and names repeated on every fragment, and one id reused for two calls", async () => {
    const fragment = (index: number, id: string, name: string, args: string) =>
      chunk({ tool_calls: [{ index, id, type: "function", function: { name, arguments: args } }] });
    server.enqueue({
      kind: "stream",
      chunks: [
        fragment(0, "call_0", "alpha", '{"a":'),
        fragment(0, "call_0", "alpha", "1}"),
        fragment(1, "call_0", "beta", '{"b":2}'),
        chunks.finish("tool_calls"),
      ],
    });
    const { message } = await request(server);
    expect(message.content).toEqual([
      { type: "toolCall", id: "call_0", name: "alpha", arguments: { a: 1 } },
      { type: "toolCall", id: "call_0_1", name: "beta", arguments: { b: 2 } },
    ]);
  });

  it("keys fragments without an index by id, and id-less fragments to the latest call", async () => {
    server.enqueue({
      kind: "stream",
      chunks: [
        chunk({ tool_calls: [{ id: "x1", function: { name: "one", arguments: '{"v"' } }] }),
        chunk({ tool_calls: [{ function: { arguments: ":1}" } }] }),
        chunk({ tool_calls: [{ id: "x2", function: { name: "two", arguments: "{}" } }] }),
        chunks.finish("tool_calls"),
      ],
    });
    const { message } = await request(server);
    expect(message.content).toEqual([
      { type: "toolCall", id: "x1", name: "one", arguments: { v: 1 } },
      { type: "toolCall", id: "x2", name: "two", arguments: {} },
    ]);
  });

  it("accepts the legacy function_call delta as one tool call", async () => {
    server.enqueue({
      kind: "stream",
      chunks: [
        chunk({ function_call: { name: "legacy", arguments: '{"q":' } }),
        chunk({ function_call: { arguments: '"x"}' } }),
        chunks.finish("function_call"),
      ],
    });
    const { message } = await request(server);
    expect(message.stopReason).toBe("toolUse");
    expect(message.content).toMatchObject([{ type: "toolCall", name: "legacy", arguments: { q: "x" } }]);
  });

  it("repairs raw newlines and stray backslashes in the final arguments", async () => {
    server.enqueue(
      toolCallReply([{ id: "c", name: "run", arguments: '{"cmd": "dir C:\\data\nls"}' }], {
        fragmentSize: 4,
      }),
    );
    const { message } = await request(server);
    expect(message.content).toEqual([
      { type: "toolCall", id: "c", name: "run", arguments: { cmd: "dir C:\\data\nls" } },
    ]);
  });
});
