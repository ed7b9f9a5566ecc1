import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { PlaygroundThread } from "../../src/playground/index.js";
import { chunks, textReply } from "../fakes/openai-server.js";
import { PlaygroundE2E } from "../support/playground-e2e.js";

/**
 * `threadline start` (gateway and worker in one process, the playground as its chat) against a local
 * chat-completions server through the real `openai` SDK, when the model makes two parallel tool calls in the
 * shape vLLM and SGLang stream: every call at `index: 0`, its id and name on its first fragment only, its
 * arguments in pieces after it (https://github.com/ai-dynamo/dynamo/pull/4723; Ollama ≥ 0.20 also puts every
 * call at index 0 with its own id: https://github.com/ollama/ollama/issues/15457).
 */
describe("a playground run whose model makes two parallel calls at index 0", () => {
  let e2e: PlaygroundE2E;

  beforeAll(async () => {
    e2e = await PlaygroundE2E.start("pg-parallel");
  }, 90_000);

  afterAll(async () => {
    await e2e?.close();
  }, 30_000);

  it("runs both tools, and the next request carries both calls and both results", async () => {
    e2e.openai.handler = (request) => {
      if (request.path !== "/chat/completions") return undefined;
      const asked = (request.body as { messages: unknown[] }).messages.length;
      // First request: the two calls; the one after the tool results: the answer.
      return asked <= 2
        ? {
            kind: "stream",
            chunks: [
              chunks.role(),
              chunks.toolCall(0, { id: "call_alpha", name: "lookup", arguments: "" }),
              chunks.toolCall(0, { arguments: '{"query":' }),
              chunks.toolCall(0, { arguments: '"alpha"}' }),
              chunks.toolCall(0, { id: "call_beta", name: "lookup", arguments: "" }),
              chunks.toolCall(0, { arguments: '{"query":' }),
              chunks.toolCall(0, { arguments: '"beta"}' }),
              chunks.finish("tool_calls"),
              chunks.usage(20, 10),
            ],
          }
        : textReply("Found alpha and beta.");
    };
    const { body } = await e2e.post("/api/threads", {
      user: { id: "u-ada", name: "Ada" },
      text: "@Threadline look up alpha and beta",
    });
    const { thread } = body as { thread: PlaygroundThread };
    await e2e.finished(thread.id);

    const chat = e2e.openai.requests.filter((request) => request.path === "/chat/completions");
    expect(chat).toHaveLength(2);
    const next = (chat[1]!.body as { messages: Record<string, unknown>[] }).messages;
    expect(next.slice(-3)).toEqual([
      {
        role: "assistant",
        content: null,
        tool_calls: [
          {
            id: "call_alpha",
            type: "function",
            function: { name: "lookup", arguments: '{"query":"alpha"}' },
          },
          {
            id: "call_beta",
            type: "function",
            function: { name: "lookup", arguments: '{"query":"beta"}' },
          },
        ],
      },
      { role: "tool", tool_call_id: "call_alpha", content: "found alpha" },
      { role: "tool", tool_call_id: "call_beta", content: "found beta" },
    ]);

    // The thread shows both calls ran, then the answer.
    const shown = (await e2e.snapshot(thread.id)).messages
      .filter((message) => message.kind === "bot")
      .map((message) => message.text)
      .join("\n");
    expect(shown.match(/🔧 lookup ✓/g)).toHaveLength(2);
    expect(shown).toContain("Found alpha and beta.");
  }, 60_000);
});
