import { describe, expect, it } from "vitest";
import { z } from "zod";
import type {
  AgentMessage,
  AssistantMessage,
  Tool,
  ToolResultMessage,
  UserMessage,
} from "../../src/agent/index.js";
import { type ContextEvent, createContextManager } from "../../src/context/index.js";
import { SUMMARY_PREFIX } from "../../src/llm/context-summary.js";
import {
  type ContextSummaryMessage,
  contextWindowFor,
  createModelSummarizer,
  createTokenCounter,
  isContextSummary,
  type SummarizeInput,
  UNKNOWN_CONTEXT_WINDOW,
} from "../../src/llm/index.js";
import { ScriptedModel, TEST_MODEL, zeroUsage } from "../fakes/scripted-model.js";

const WINDOW = 16_384;
const SYSTEM_PROMPT = "You are a test bot working in a chat thread.";
const TOOLS: Tool[] = [
  { name: "search", description: "Searches the docs.", parameters: z.object({ query: z.string() }) },
];

function user(text: string): UserMessage {
  return { role: "user", content: text, timestamp: 1 };
}
function assistant(content: AssistantMessage["content"]): AssistantMessage {
  return {
    role: "assistant",
    content,
    api: "scripted",
    provider: "scripted",
    model: "scripted",
    usage: zeroUsage(),
    stopReason: content.some((b) => b.type === "toolCall") ? "toolUse" : "stop",
    timestamp: 1,
  };
}
function result(id: string, text: string): ToolResultMessage {
  return {
    role: "toolResult",
    toolCallId: id,
    toolName: "search",
    content: [{ type: "text", text }],
    isError: false,
    timestamp: 1,
  };
}

/** A thread of `turns` × 4 messages: question, tool call, tool result (every 10th is large), answer. */
function longThread(turns: number): AgentMessage[] {
  const messages: AgentMessage[] = [];
  for (let i = 0; i < turns; i++) {
    messages.push(user(`Alice: question ${i} about the deployment pipeline and its flaky step number ${i}?`));
    messages.push(
      assistant([{ type: "toolCall", id: `c${i}`, name: "search", arguments: { query: `step ${i}` } }]),
    );
    const body =
      i % 10 === 0 ? `log line ${i} `.repeat(600) : `Step ${i} is configured in deploy.yml line ${i}.`;
    messages.push(result(`c${i}`, body));
    messages.push(
      assistant([{ type: "text", text: `Step ${i} fails because of a timeout; raise it to ${i + 30} s.` }]),
    );
  }
  return messages;
}

/** Request tokens as a fresh counter sees them (system prompt and tools included). */
function requestTokens(messages: AgentMessage[]): number {
  const counter = createTokenCounter();
  return (
    counter.text(SYSTEM_PROMPT) + counter.tools(TOOLS) + messages.reduce((n, m) => n + counter.message(m), 0)
  );
}

/** Every tool result directly follows the calls of its assistant message, and every call has its result. */
function pairsIntact(messages: AgentMessage[]): boolean {
  let open: string[] = [];
  for (const message of messages) {
    const role = (message as { role: string }).role;
    if (role === "toolResult") {
      const id = (message as ToolResultMessage).toolCallId;
      if (!open.includes(id)) return false;
      open = open.filter((other) => other !== id);
      continue;
    }
    if (open.length > 0) return false;
    if (role === "assistant")
      open = (message as AssistantMessage).content.flatMap((b) => (b.type === "toolCall" ? [b.id] : []));
  }
  return open.length === 0;
}

function firstText(message: AgentMessage | undefined): string {
  const content = (message as UserMessage | undefined)?.content;
  return typeof content === "string"
    ? content
    : ((content?.[0] as { text?: string } | undefined)?.text ?? "");
}

/** A summarizer that records what it was asked. */
function recordingSummarizer() {
  const calls: SummarizeInput[] = [];
  return {
    calls,
    summarize: async (input: SummarizeInput) => {
      calls.push(input);
      return `Summary #${calls.length} of ${input.messages.length} messages.`;
    },
  };
}

describe("context manager", () => {
  it("keeps a 2,000-message thread's request under budget, pairs intact, and reuses its summary", async () => {
    const thread = longThread(500);
    expect(thread).toHaveLength(2000);
    const snapshot = JSON.stringify(thread);
    const summarizer = recordingSummarizer();
    const persisted: AgentMessage[] = [];
    const events: ContextEvent[] = [];
    const manager = createContextManager({
      contextWindow: WINDOW,
      summarize: summarizer.summarize,
      onEvent: (event) => events.push(event),
    });
    const budget = WINDOW - 2048;
    const transform = manager({
      systemPrompt: SYSTEM_PROMPT,
      tools: TOOLS,
      appendToTranscript: async (message) => {
        persisted.push(message);
        return true;
      },
    });

    const first = await transform(thread);
    expect(requestTokens(first)).toBeLessThanOrEqual(budget);
    expect(pairsIntact(first)).toBe(true);
    expect(firstText(first[0])).toBe(
      `${SUMMARY_PREFIX}\n\nSummary #1 of ${(persisted[0] as unknown as ContextSummaryMessage).covered} messages.`,
    );
    expect(first.at(-1)).toBe(thread.at(-1));
    expect(summarizer.calls).toHaveLength(1);
    expect(persisted).toHaveLength(1);
    expect(isContextSummary(persisted[0])).toBe(true);
    expect(events.map((e) => e.type)).toEqual(["shortened", "summarized"]);
    // The transcript itself is untouched: only the request is trimmed.
    expect(JSON.stringify(thread)).toBe(snapshot);

    // Next turn of the same run: the loop's messages grow (without the summary); no new summary call.
    const next = [
      ...thread,
      user("Alice: and what about step 500?"),
      assistant([{ type: "text", text: "Let me check." }]),
    ];
    const second = await transform(next);
    expect(summarizer.calls).toHaveLength(1);
    expect(firstText(second[0])).toContain("Summary #1");
    expect(second.at(-1)).toBe(next.at(-1));
    expect(requestTokens(second)).toBeLessThanOrEqual(budget);

    // Next run: the transcript, as loaded from Redis, carries the persisted summary after the messages
    // that existed when it was made; a new manager instance reuses it without a model call.
    const reloaded = JSON.parse(
      JSON.stringify([...thread, ...persisted, ...next.slice(thread.length)]),
    ) as AgentMessage[];
    const third = await manager({ systemPrompt: SYSTEM_PROMPT, tools: TOOLS })(reloaded);
    expect(summarizer.calls).toHaveLength(1);
    expect(firstText(third[0])).toContain("Summary #1");
    expect(third.filter(isContextSummary)).toEqual([]);
    expect(pairsIntact(third)).toBe(true);
    expect(requestTokens(third)).toBeLessThanOrEqual(budget);
  });

  it("never lets the kept part start with a tool result, even where the budget boundary falls on one", async () => {
    // Large tool calls and tiny results: walking back from the end, the budget runs out on a call,
    // so the natural boundary is the result right after it.
    const messages: AgentMessage[] = [];
    for (let i = 0; i < 60; i++) {
      messages.push(user(`Alice: write file ${i}`));
      messages.push(
        assistant([
          { type: "toolCall", id: `w${i}`, name: "search", arguments: { query: `line ${i} `.repeat(150) } },
        ]),
      );
      messages.push(result(`w${i}`, "ok"));
      messages.push(assistant([{ type: "text", text: `wrote ${i}` }]));
    }
    for (const summarize of [recordingSummarizer().summarize, undefined]) {
      const request = await createContextManager({
        contextWindow: 8_192,
        ...(summarize ? { summarize } : {}),
      })({})(messages);
      expect((request[1] as { role: string }).role).not.toBe("toolResult");
      expect(pairsIntact(request.slice(1))).toBe(true);
    }
  });

  it("summarizes again as the thread keeps growing, building on the previous summary", async () => {
    const summarizer = recordingSummarizer();
    const transform = createContextManager({ contextWindow: WINDOW, summarize: summarizer.summarize })({});
    const thread = longThread(300);
    await transform(thread);
    const grown = [...thread, ...longThread(300).map((m) => JSON.parse(JSON.stringify(m)) as AgentMessage)];
    const request = await transform(grown);
    expect(summarizer.calls).toHaveLength(2);
    expect(summarizer.calls[1]!.previousSummary).toMatch(/^Summary #1/);
    expect(firstText(request[0])).toContain("Summary #2");
    expect(pairsIntact(request)).toBe(true);
  });

  it("first shortens the oldest large tool results, keeping head and tail, before summarizing", async () => {
    const big = `HEAD ${"middle ".repeat(5000)} TAIL`;
    const messages: AgentMessage[] = [
      user("Alice: read the logs"),
      assistant([{ type: "toolCall", id: "a", name: "search", arguments: { query: "logs" } }]),
      result("a", big),
      assistant([{ type: "toolCall", id: "b", name: "search", arguments: { query: "more" } }]),
      result("b", big),
    ];
    const summarizer = recordingSummarizer();
    const request = await createContextManager({ contextWindow: 8_192, summarize: summarizer.summarize })({})(
      messages,
    );
    expect(summarizer.calls).toEqual([]);
    const older = firstText(request[2]);
    expect(older.length).toBeLessThan(2_000);
    expect(older.startsWith("HEAD middle")).toBe(true);
    expect(older.endsWith("middle  TAIL")).toBe(true);
    expect(older).toMatch(/\[… \d+ characters left out to fit the model's context window …\]/);
    // The latest batch, which the model is about to read, is kept whole.
    expect(request[4]).toBe(messages[4]);
  });

  it("when summarizing fails, leaves the oldest turns out with a note and still fits", async () => {
    const events: ContextEvent[] = [];
    const transform = createContextManager({
      contextWindow: WINDOW,
      summarize: async () => {
        throw new Error("model unreachable");
      },
      onEvent: (event) => events.push(event),
    })({ systemPrompt: SYSTEM_PROMPT, tools: TOOLS });
    const request = await transform(longThread(500));
    expect(firstText(request[0])).toMatch(/^\[\d+ earlier messages of this thread are not shown/);
    expect(pairsIntact(request.slice(1))).toBe(true);
    expect(requestTokens(request)).toBeLessThanOrEqual(WINDOW - 2048);
    expect(events.map((e) => e.type)).toContain("summary_failed");
  });

  it("squeezes a single turn that alone exceeds the window", async () => {
    const huge = user(`Alice: ${"please read this very long paste ".repeat(4000)}`);
    const transform = createContextManager({ contextWindow: 4_096 })({});
    const request = await transform([huge]);
    expect(requestTokens(request)).toBeLessThanOrEqual(4_096 - 512);
    expect(firstText(request[0])).toMatch(/^Alice: please read/);
  });

  it("makes the summary with one model call that fits the model's window", async () => {
    const model = new ScriptedModel([{ text: "- Alice is fixing the deploy pipeline." }]);
    const summarize = createModelSummarizer({
      streamFn: model.streamFn,
      model: TEST_MODEL,
      maxInputTokens: 3_000,
    });
    const text = await summarize({ previousSummary: "- Earlier: Bob set up CI.", messages: longThread(200) });
    expect(text).toBe("- Alice is fixing the deploy pipeline.");
    expect(model.requests).toHaveLength(1);
    const prompt = firstText(model.requests[0]!.messages[0]);
    expect(prompt.startsWith("Previous summary:\n- Earlier: Bob set up CI.\n\nNew messages:\n[")).toBe(true);
    expect(prompt).toMatch(/older lines omitted/);
    expect(prompt).toContain("[assistant] Step 199 fails because of a timeout");
    expect(createTokenCounter().text(prompt)).toBeLessThanOrEqual(3_000);
    expect(model.requests[0]!.options.maxTokens).toBe(1_200);
  });

  it("knows context windows: configured, published, families, and a safe default", () => {
    expect(contextWindowFor("gpt-4o-mini")).toMatchObject({
      tokens: 128_000,
      source: "known",
      openAITokenizer: true,
    });
    expect(contextWindowFor("openai/gpt-4.1")).toMatchObject({ source: "known", openAITokenizer: true });
    expect(contextWindowFor("llama3.1:8b")).toMatchObject({
      tokens: 128_000,
      source: "known",
      openAITokenizer: false,
    });
    expect(contextWindowFor("my-finetune")).toEqual({
      tokens: UNKNOWN_CONTEXT_WINDOW,
      source: "unknown",
      openAITokenizer: false,
    });
    expect(contextWindowFor("my-finetune", 65_536)).toMatchObject({ tokens: 65_536, source: "configured" });
  });

  it("counts special-token text as plain text instead of throwing", () => {
    expect(createTokenCounter().text("see <|endoftext|> here")).toBeGreaterThan(3);
  });
});
