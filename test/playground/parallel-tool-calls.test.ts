import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { PlaygroundSnapshot, PlaygroundThread } from "../../src/playground/index.js";
import { chunks, FakeOpenAIServer, textReply } from "../fakes/openai-server.js";
import { CliProcess } from "../support/process.js";
import { connect, deletePrefix, redisEnv, requireRedis, uniquePrefix } from "../support/redis.js";
import { EventStream, freePort } from "./helpers.js";

/**
 * `threadline start` (gateway and worker in one process, the playground as its chat) against a local
 * chat-completions server through the real `openai` SDK, when the model makes two parallel tool calls in the
 * shape vLLM and SGLang stream: every call at `index: 0`, its id and name on its first fragment only, its
 * arguments in pieces after it (https://github.com/ai-dynamo/dynamo/pull/4723; Ollama ≥ 0.20 also puts every
 * call at index 0 with its own id: https://github.com/ollama/ollama/issues/15457).
 */
describe("a playground run whose model makes two parallel calls at index 0", () => {
  const prefix = uniquePrefix("pg-parallel");
  const redis = connect();
  let model: FakeOpenAIServer;
  let bot: CliProcess | undefined;
  let url: string;

  beforeAll(async () => {
    await requireRedis(redis);
    model = await FakeOpenAIServer.start();
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    bot = await CliProcess.start(
      "start",
      {
        ...redisEnv(),
        THREADLINE_PREFIX: prefix,
        PLAYGROUND_PORT: String(port),
        OPS_PORT: "0",
        OPENAI_BASE_URL: model.baseURL,
        OPENAI_API_KEY: "sk-test",
        OPENAI_MODEL: "fake-model",
        OPENAI_CONTEXT_WINDOW: "32000",
        THREADLINE_TOOLS_MODULE: "test/fakes/slack-tools.ts",
        LOG_LEVEL: "info",
      },
      "playground: open",
      60_000,
    );
  }, 90_000);

  afterAll(async () => {
    await bot?.stop();
    await model.close();
    await deletePrefix(redis, prefix);
    redis.disconnect();
  }, 30_000);

  it("runs both tools, and the next request carries both calls and both results", async () => {
    model.handler = (request) => {
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
    const events = await EventStream.open(`${url}/api/events`);
    try {
      const created = await fetch(`${url}/api/threads`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          user: { id: "u-ada", name: "Ada" },
          text: "@Threadline look up alpha and beta",
        }),
      });
      const { thread } = (await created.json()) as { thread: PlaygroundThread };
      await events.waitFor((received) =>
        received.some(
          (event) => event.type === "status" && event.thread === thread.id && event.status === null,
        ),
      );

      const chat = model.requests.filter((request) => request.path === "/chat/completions");
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
      const snapshot = (await (await fetch(`${url}/api/threads/${thread.id}`)).json()) as PlaygroundSnapshot;
      const shown = snapshot.messages
        .filter((message) => message.kind === "bot")
        .map((message) => message.text)
        .join("\n");
      expect(shown.match(/🔧 lookup ✓/g)).toHaveLength(2);
      expect(shown).toContain("Found alpha and beta.");
    } finally {
      events.close();
    }
  }, 60_000);
});
