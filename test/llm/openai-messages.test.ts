import { describe, expect, it } from "vitest";
import { z } from "zod";
import type { AgentMessage, AssistantMessage, Message, ToolResultMessage } from "../../src/agent/index.js";
import { createConvertToLlm } from "../../src/llm/index.js";
import {
  convertToOpenAIMessages,
  IMAGE_OMITTED_TEXT,
  INTERRUPTED_ANSWER_TEXT,
  MISSING_TOOL_RESULT_TEXT,
  TOOL_IMAGES_TEXT,
  toolsToOpenAI,
} from "../../src/llm/openai/index.js";
import { toolParametersSchema } from "../../src/llm/tool-schema.js";
import { emptyUsage } from "../../src/llm/usage.js";

const withImages = { input: ["text", "image"] as ("text" | "image")[] };
const textOnly = { input: ["text"] as ("text" | "image")[] };
const image = { type: "image" as const, data: "AAAA", mimeType: "image/png" };

function assistant(
  content: AssistantMessage["content"],
  stopReason: AssistantMessage["stopReason"] = "stop",
): AssistantMessage {
  return {
    role: "assistant",
    content,
    api: "openai-completions",
    provider: "openai",
    model: "m",
    usage: emptyUsage(),
    stopReason,
    timestamp: 0,
  };
}

function result(toolCallId: string, text: string, extra: Partial<ToolResultMessage> = {}): ToolResultMessage {
  return {
    role: "toolResult",
    toolCallId,
    toolName: "t",
    content: [{ type: "text", text }],
    isError: false,
    timestamp: 0,
    ...extra,
  };
}

describe("convertToOpenAIMessages", () => {
  it("puts the system prompt first and renders a tool round trip", () => {
    const messages: Message[] = [
      { role: "user", content: "What is in a.txt?", timestamp: 0 },
      assistant(
        [
          { type: "thinking", thinking: "I should read it", thinkingSignature: "reasoning_content" },
          { type: "text", text: "Reading." },
          { type: "toolCall", id: "call_1", name: "read", arguments: { path: "a.txt" } },
          { type: "toolCall", id: "call_2", name: "stat", arguments: {} },
        ],
        "toolUse",
      ),
      result("call_1", "hello"),
      result("call_2", "", { content: [], isError: true }),
      assistant([
        { type: "text", text: "It says " },
        { type: "text", text: "hello." },
      ]),
    ];
    expect(convertToOpenAIMessages("Be brief.", messages, withImages)).toEqual([
      { role: "system", content: "Be brief." },
      { role: "user", content: "What is in a.txt?" },
      {
        role: "assistant",
        content: "Reading.",
        tool_calls: [
          { id: "call_1", type: "function", function: { name: "read", arguments: '{"path":"a.txt"}' } },
          { id: "call_2", type: "function", function: { name: "stat", arguments: "{}" } },
        ],
      },
      { role: "tool", tool_call_id: "call_1", content: "hello" },
      { role: "tool", tool_call_id: "call_2", content: "(no output)" },
      { role: "assistant", content: "It says hello." },
    ]);
  });

  it("omits an empty system prompt and uses the developer role when asked", () => {
    const messages: Message[] = [{ role: "user", content: "hi", timestamp: 0 }];
    expect(convertToOpenAIMessages("", messages, withImages)).toEqual([{ role: "user", content: "hi" }]);
    expect(convertToOpenAIMessages("S", messages, withImages, { systemRole: "developer" })[0]).toEqual({
      role: "developer",
      content: "S",
    });
  });

  it("sends user images as data URLs, or a note when the model takes no images", () => {
    const messages: Message[] = [
      { role: "user", content: [{ type: "text", text: "Look:" }, image], timestamp: 0 },
      {
        role: "user",
        content: [
          { type: "text", text: "a" },
          { type: "text", text: "b" },
        ],
        timestamp: 0,
      },
    ];
    expect(convertToOpenAIMessages("", messages, withImages)).toEqual([
      {
        role: "user",
        content: [
          { type: "text", text: "Look:" },
          { type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } },
        ],
      },
      { role: "user", content: "a\nb" },
    ]);
    expect(convertToOpenAIMessages("", messages, textOnly)[0]).toEqual({
      role: "user",
      content: [
        { type: "text", text: "Look:" },
        { type: "text", text: IMAGE_OMITTED_TEXT },
      ],
    });
  });

  it("moves tool-result images into one user message after the batch's tool messages", () => {
    const messages: Message[] = [
      assistant(
        [
          { type: "toolCall", id: "a", name: "shot", arguments: {} },
          { type: "toolCall", id: "b", name: "shot", arguments: {} },
        ],
        "toolUse",
      ),
      result("a", "first", { content: [{ type: "text", text: "first" }, image] }),
      result("b", "second"),
    ];
    expect(convertToOpenAIMessages("", messages, withImages)).toEqual([
      expect.objectContaining({ role: "assistant" }),
      { role: "tool", tool_call_id: "a", content: "first" },
      { role: "tool", tool_call_id: "b", content: "second" },
      {
        role: "user",
        content: [
          { type: "text", text: TOOL_IMAGES_TEXT },
          { type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } },
        ],
      },
    ]);
  });

  it("keeps an interrupted answer's text, marked as cut, without its calls; drops a plain abort", () => {
    const cut: AssistantMessage = {
      ...assistant(
        [
          { type: "text", text: "Step one is to" },
          { type: "toolCall", id: "half", name: "t", arguments: { path: "a" } },
        ],
        "aborted",
      ),
      interrupted: { by: "Bea" },
    };
    const messages: Message[] = [
      { role: "user", content: "Explain it", timestamp: 0 },
      cut,
      result("half", "Operation aborted", { isError: true }),
      { role: "user", content: "Shorter please", timestamp: 0 },
      assistant([{ type: "text", text: "never shown" }], "aborted"),
      { role: "user", content: "again", timestamp: 0 },
    ];
    expect(convertToOpenAIMessages("", messages, withImages)).toEqual([
      { role: "user", content: "Explain it" },
      {
        role: "assistant",
        content: `Step one is to\n\n${INTERRUPTED_ANSWER_TEXT.replace("{from}", " from Bea")}`,
      },
      { role: "user", content: "Shorter please" },
      { role: "user", content: "again" },
    ]);
    // Cut before any text: nothing of it is sent.
    const silent = { ...assistant([], "aborted"), interrupted: {} };
    expect(
      convertToOpenAIMessages("", [{ role: "user", content: "x", timestamp: 0 }, silent], withImages),
    ).toEqual([{ role: "user", content: "x" }]);
  });

  it("skips failed turns and drops results without a call; synthesizes missing results", () => {
    const messages: Message[] = [
      { role: "user", content: "go", timestamp: 0 },
      assistant([{ type: "toolCall", id: "lost", name: "t", arguments: {} }], "error"),
      result("lost", "orphan"),
      assistant([{ type: "text", text: "half an answ" }], "aborted"),
      assistant([]),
      { role: "user", content: "again", timestamp: 0 },
      assistant([{ type: "toolCall", id: "x", name: "t", arguments: { n: 1 } }], "toolUse"),
    ];
    expect(convertToOpenAIMessages("", messages, withImages)).toEqual([
      { role: "user", content: "go" },
      { role: "user", content: "again" },
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "x", type: "function", function: { name: "t", arguments: '{"n":1}' } }],
      },
      { role: "tool", tool_call_id: "x", content: MISSING_TOOL_RESULT_TEXT },
    ]);
  });

  it("sends thinking back only with replayReasoning, in the field it came from", () => {
    const messages: Message[] = [
      assistant([
        { type: "thinking", thinking: "hmm", thinkingSignature: "reasoning" },
        { type: "thinking", thinking: "secret", redacted: true },
        { type: "text", text: "ok" },
      ]),
    ];
    expect(convertToOpenAIMessages("", messages, withImages)).toEqual([{ role: "assistant", content: "ok" }]);
    expect(convertToOpenAIMessages("", messages, withImages, { replayReasoning: true })).toEqual([
      { role: "assistant", content: "ok", reasoning: "hmm" },
    ]);
  });
});

describe("toolsToOpenAI", () => {
  it("converts zod parameters to JSON Schema function tools (input side, no $schema)", () => {
    const parameters = z.object({
      path: z.string().describe("file to read"),
      mode: z.enum(["text", "binary"]).default("text"),
      lines: z.array(z.number()).optional(),
    });
    expect(toolsToOpenAI([{ name: "read", description: "Read a file", parameters }])).toEqual([
      {
        type: "function",
        function: {
          name: "read",
          description: "Read a file",
          parameters: {
            type: "object",
            properties: {
              path: { type: "string", description: "file to read" },
              mode: { type: "string", enum: ["text", "binary"], default: "text" },
              lines: { type: "array", items: { type: "number" } },
            },
            required: ["path"],
          },
        },
      },
    ]);
  });

  it("caches the schema per zod object and never throws on unrepresentable types", () => {
    const parameters = z.object({ when: z.date(), n: z.bigint() });
    const first = toolParametersSchema(parameters);
    expect(toolParametersSchema(parameters)).toBe(first);
    expect(first).toMatchObject({ type: "object", properties: { when: {}, n: {} } });
  });

  it("wraps a non-object schema so function parameters stay an object", () => {
    expect(toolParametersSchema(z.any())).toEqual({ type: "object", properties: {} });
  });
});

describe("createConvertToLlm", () => {
  interface Note {
    role: "note";
    text: string;
    timestamp: number;
  }
  const note: Note = { role: "note", text: "deploy finished", timestamp: 0 };
  const transcript = [{ role: "user", content: "hi", timestamp: 0 }, note] as unknown as AgentMessage[];

  it("drops custom messages by default and keeps LLM messages as the same objects", () => {
    const converted = createConvertToLlm()(transcript);
    expect(converted).toEqual([transcript[0]]);
    expect(converted[0]).toBe(transcript[0]);
  });

  it("renders custom messages with renderCustom", () => {
    const convert = createConvertToLlm({
      renderCustom: (message) => {
        const custom = message as unknown as Note;
        return custom.role === "note"
          ? { role: "user", content: `[note] ${custom.text}`, timestamp: custom.timestamp }
          : undefined;
      },
    });
    expect(convert(transcript)).toEqual([
      { role: "user", content: "hi", timestamp: 0 },
      { role: "user", content: "[note] deploy finished", timestamp: 0 },
    ]);
  });
});
