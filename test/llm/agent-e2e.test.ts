import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import {
  Agent,
  type AgentTool,
  type AssistantMessage,
  type Message,
  type ToolResultMessage,
} from "../../src/agent/index.js";
import { createConvertToLlm, createOpenAIStreamFn, openAIModel } from "../../src/llm/index.js";
import { chunks, FakeOpenAIServer, textReply, toolCallReply } from "../fakes/openai-server.js";

let server: FakeOpenAIServer;

beforeEach(async () => {
  server = await FakeOpenAIServer.start();
});

afterEach(async () => {
  await server.close();
});

const files: Record<string, string> = { "a.txt": "alpha", "b.txt": "beta" };

function createAgent(options: { onRead?: (path: string) => void; timeoutMs?: number } = {}) {
  const written: Record<string, string> = {};
  const readFile: AgentTool<z.ZodObject<{ path: z.ZodString }>> = {
    name: "read_file",
    description: "Read a text file",
    parameters: z.object({ path: z.string().describe("file path") }),
    execute: async (_id, { path }) => {
      options.onRead?.(path);
      return { content: [{ type: "text", text: files[path] ?? "missing" }], details: { path } };
    },
  };
  const writeFile: AgentTool<z.ZodObject<{ path: z.ZodString; text: z.ZodString }>> = {
    name: "write_file",
    description: "Write a text file",
    parameters: z.object({ path: z.string(), text: z.string() }),
    execute: async (_id, { path, text }) => {
      written[path] = text;
      return { content: [{ type: "text", text: `wrote ${text.length} bytes` }], details: {} };
    },
  };
  const keysAsked: string[] = [];
  const agent = new Agent({
    initialState: {
      systemPrompt: "You are a file assistant.",
      model: openAIModel({ id: "fake-model", baseUrl: server.baseURL }),
      tools: [readFile, writeFile],
    },
    streamFn: createOpenAIStreamFn({ maxRetries: 0, timeoutMs: options.timeoutMs ?? 10_000 }),
    convertToLlm: createConvertToLlm(),
    getApiKey: (provider) => {
      keysAsked.push(provider);
      return `sk-run-${keysAsked.length}`;
    },
  });
  return { agent, written, keysAsked };
}

type Body = {
  messages: { role: string; content?: unknown; tool_calls?: { id: string }[]; tool_call_id?: string }[];
  tools?: { function: { name: string } }[];
};

function body(index: number): Body {
  return server.requests[index]?.body as Body;
}

describe("Agent with the OpenAI stream function, end to end", () => {
  it("runs two tool rounds with a steering message and sends the right transcript each time", async () => {
    const steer = { role: "user" as const, content: "Also put BANANA in the summary.", timestamp: 1 };
    let steered = false;
    const { agent, written, keysAsked } = createAgent({
      onRead: () => {
        if (!steered) {
          steered = true;
          agent.steer(steer);
        }
      },
    });
    server.enqueue(
      toolCallReply(
        [
          { id: "call_read_a", name: "read_file", arguments: { path: "a.txt" } },
          { id: "call_read_b", name: "read_file", arguments: { path: "b.txt" } },
        ],
        { text: "Reading both.", fragmentSize: 5, interleave: true },
      ),
      // The second round comes from a server that sends no tool-call ids.
      toolCallReply([{ name: "write_file", arguments: { path: "sum.txt", text: "alpha+beta BANANA" } }], {
        fragmentSize: 3,
      }),
      textReply("Done: sum.txt holds alpha+beta BANANA."),
    );

    await agent.prompt("Summarize a.txt and b.txt into sum.txt");

    expect(agent.state.errorMessage).toBeUndefined();
    expect(written).toEqual({ "sum.txt": "alpha+beta BANANA" });
    expect(server.requests).toHaveLength(3);
    expect(server.pending).toBe(0);
    expect(keysAsked).toEqual(["openai", "openai", "openai"]);
    expect(server.requests.map((r) => r.headers.authorization)).toEqual([
      "Bearer sk-run-1",
      "Bearer sk-run-2",
      "Bearer sk-run-3",
    ]);

    // Every request carries the tools as JSON Schema and streams with usage.
    for (let i = 0; i < 3; i++) {
      expect(body(i)).toMatchObject({
        model: "fake-model",
        stream: true,
        stream_options: { include_usage: true },
      });
      expect(body(i).tools?.map((tool) => tool.function.name)).toEqual(["read_file", "write_file"]);
    }
    expect(body(0).tools?.[0]).toEqual({
      type: "function",
      function: {
        name: "read_file",
        description: "Read a text file",
        parameters: {
          type: "object",
          properties: { path: { type: "string", description: "file path" } },
          required: ["path"],
        },
      },
    });

    // Request 1: system prompt and the prompt.
    expect(body(0).messages).toEqual([
      { role: "system", content: "You are a file assistant." },
      { role: "user", content: "Summarize a.txt and b.txt into sum.txt" },
    ]);

    // Request 2: the first tool round (ids paired, results in call order), then the steering message.
    expect(body(1).messages).toEqual([
      { role: "system", content: "You are a file assistant." },
      { role: "user", content: "Summarize a.txt and b.txt into sum.txt" },
      {
        role: "assistant",
        content: "Reading both.",
        tool_calls: [
          {
            id: "call_read_a",
            type: "function",
            function: { name: "read_file", arguments: '{"path":"a.txt"}' },
          },
          {
            id: "call_read_b",
            type: "function",
            function: { name: "read_file", arguments: '{"path":"b.txt"}' },
          },
        ],
      },
      { role: "tool", tool_call_id: "call_read_a", content: "alpha" },
      { role: "tool", tool_call_id: "call_read_b", content: "beta" },
      { role: "user", content: "Also put BANANA in the summary." },
    ]);

    // Request 3: the second round; the generated id pairs the call with its result.
    const third = body(2).messages;
    expect(third.slice(0, 6)).toEqual(body(1).messages);
    expect(third).toHaveLength(8);
    const round2 = third[6];
    const generatedId = round2?.tool_calls?.[0]?.id;
    expect(generatedId).toMatch(/^call_/);
    expect(round2).toEqual({
      role: "assistant",
      content: null,
      tool_calls: [
        {
          id: generatedId,
          type: "function",
          function: { name: "write_file", arguments: '{"path":"sum.txt","text":"alpha+beta BANANA"}' },
        },
      ],
    });
    expect(third[7]).toEqual({ role: "tool", tool_call_id: generatedId, content: "wrote 17 bytes" });

    // The transcript: every message the model saw, in order, plus the final answer.
    const messages = agent.state.messages as Message[];
    expect(messages.map((m) => m.role)).toEqual([
      "user",
      "assistant",
      "toolResult",
      "toolResult",
      "user",
      "assistant",
      "toolResult",
      "assistant",
    ]);
    expect(messages[4]).toBe(steer);
    expect((messages[6] as ToolResultMessage).toolCallId).toBe(generatedId);
    const final = messages[7] as AssistantMessage;
    expect(final).toMatchObject({
      stopReason: "stop",
      content: [{ type: "text", text: "Done: sum.txt holds alpha+beta BANANA." }],
      usage: { input: 10, output: 5, totalTokens: 15 },
      api: "openai-completions",
      model: "fake-model",
    });
    expect((messages[1] as AssistantMessage).stopReason).toBe("toolUse");
  });

  it("streams message_update events carrying the provider events", async () => {
    const { agent } = createAgent();
    server.enqueue(textReply("Hi there", { pieceSize: 2 }));
    const updates: string[] = [];
    agent.subscribe((event) => {
      if (event.type === "message_update") updates.push(event.assistantMessageEvent.type);
    });
    await agent.prompt("hello");
    expect(updates).toEqual([
      "text_start",
      "text_delta",
      "text_delta",
      "text_delta",
      "text_delta",
      "text_end",
    ]);
  });

  it("abort mid-stream ends the run with an aborted message; the server sees the disconnect", async () => {
    const { agent } = createAgent();
    server.enqueue({ ...textReply("y".repeat(300), { pieceSize: 1 }), delayMs: 5 });
    agent.subscribe((event) => {
      if (event.type === "message_update" && event.assistantMessageEvent.type === "text_delta") agent.abort();
    });
    await agent.prompt("go");
    const last = agent.state.messages.at(-1) as AssistantMessage;
    expect(last).toMatchObject({
      role: "assistant",
      stopReason: "aborted",
      errorMessage: "Request was aborted",
    });
    expect(agent.state.errorMessage).toBe("Request was aborted");
    await expect(server.requests[0]?.outcome).resolves.toBe("client-disconnected");
  });
});

describe("every provider failure reaches the Agent transcript as a readable message", () => {
  const cases: [string, () => void, string | ((baseURL: string) => string)][] = [
    [
      "bad API key",
      () => server.enqueue({ kind: "error", status: 401 }),
      "The model provider rejected the API key (401). Check OPENAI_API_KEY.",
    ],
    [
      "model not found",
      () => server.enqueue({ kind: "error", status: 404 }),
      (url) => `Model "fake-model" was not found at ${url} (404). Check the model name and base URL.`,
    ],
    [
      "rate limited",
      () => server.enqueue({ kind: "error", status: 429, headers: { "retry-after": "30" } }),
      "Rate limited by the model provider (429); retry after 30s.",
    ],
    [
      "server error",
      () => server.enqueue({ kind: "error", status: 502, body: "" }),
      (url) => `The model server at ${url} is unavailable (502). Try again later.`,
    ],
    [
      "timeout",
      () => server.enqueue({ kind: "hang" }),
      (url) => `The model server at ${url} did not answer within 300 ms (timeout).`,
    ],
    [
      "stream cut mid-way",
      () => server.enqueue({ kind: "stream", chunks: [chunks.role(), chunks.text("Part")], dropAfter: 2 }),
      "The model stream was cut off before it finished.",
    ],
    [
      "content filter",
      () => server.enqueue({ kind: "stream", chunks: [chunks.text("I"), chunks.finish("content_filter")] }),
      "The model provider's content filter stopped the answer (finish_reason: content_filter).",
    ],
  ];

  for (const [name, script, expected] of cases) {
    it(`${name}`, async () => {
      const { agent } = createAgent(name === "timeout" ? { timeoutMs: 300 } : {});
      script();
      await agent.prompt("hi");
      const text = typeof expected === "string" ? expected : expected(server.baseURL);
      const last = agent.state.messages.at(-1) as AssistantMessage;
      expect(last).toMatchObject({ role: "assistant", stopReason: "error", errorMessage: text });
      expect(agent.state.errorMessage).toBe(text);

      // The next run works, and the failed turn is not sent back to the model.
      agent.streamFn = createOpenAIStreamFn({ maxRetries: 0 });
      server.enqueue(textReply("recovered"));
      await agent.prompt("try again");
      expect(agent.state.errorMessage).toBeUndefined();
      expect(body(server.requests.length - 1).messages).toEqual([
        { role: "system", content: "You are a file assistant." },
        { role: "user", content: "hi" },
        { role: "user", content: "try again" },
      ]);
    });
  }

  it("connection refused", async () => {
    const { agent } = createAgent();
    const baseURL = server.baseURL;
    await server.close();
    await agent.prompt("hi");
    expect(agent.state.errorMessage).toBe(
      `Could not reach the model server at ${baseURL} (connection refused).`,
    );
    server = await FakeOpenAIServer.start();
  });
});
