import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Message } from "../../src/agent/index.js";
import {
  createContextRecovery,
  createOpenAIStreamFn,
  createTokenCounter,
  type ModelWindow,
} from "../../src/llm/index.js";
import { probeModelEndpoint, serverContextWindow } from "../../src/llm/openai/index.js";
import { FakeOpenAIServer, textReply } from "../fakes/openai-server.js";
import { fakeModel, user } from "./helpers.js";

let server: FakeOpenAIServer;

beforeEach(async () => {
  server = await FakeOpenAIServer.start();
});

afterEach(async () => {
  await server.close();
});

describe("learning the context window from the server", () => {
  it("llama.cpp reports it as meta.n_ctx in /v1/models, under its GGUF path as the only id", async () => {
    // https://github.com/NousResearch/hermes-agent/issues/64897:
    // `{"data":[{"id":"/app/…/<model>.gguf","meta":{"n_ctx":256000,"n_ctx_train":262144}}]}`.
    server.models = ["/models/qwen2.5-7b-instruct-q4_k_m.gguf"];
    server.modelFields = { meta: { n_ctx: 4096, n_ctx_train: 32768 } };
    expect(await serverContextWindow({ baseURL: server.baseURL, model: "qwen2.5" })).toBe(4096);
  });

  it("vLLM reports max_model_len; a server that reports nothing gives undefined", async () => {
    // vLLM's ModelCard carries `max_model_len` (https://github.com/NousResearch/hermes-agent/pull/78212 reads it).
    server.modelFields = { max_model_len: 8192 };
    expect(await serverContextWindow({ baseURL: server.baseURL, model: "fake-model" })).toBe(8192);
    server.modelFields = {};
    expect(await serverContextWindow({ baseURL: server.baseURL, model: "fake-model" })).toBeUndefined();
  });

  it("doctor's probe carries the window", async () => {
    server.modelFields = { meta: { n_ctx: 4096 } };
    const result = await probeModelEndpoint({ baseURL: server.baseURL, model: "fake-model" });
    expect(result).toMatchObject({ ok: true, contextWindow: 4096 });
  });
});

describe("a context-exceeded error shrinks the context and retries once", () => {
  const long = "lorem ipsum dolor sit amet ".repeat(400);
  const history: Message[] = [
    user(`first question ${long}`),
    {
      role: "assistant",
      content: [{ type: "text", text: long }],
      api: "openai-completions",
      provider: "openai",
      model: "fake-model",
      usage: {
        input: 0,
        output: 0,
        cacheRead: 0,
        cacheWrite: 0,
        totalTokens: 0,
        cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
      },
      stopReason: "stop",
      timestamp: 0,
    },
    user("the latest question"),
  ];

  it("llama.cpp exceed_context_size_error: learns n_ctx, retries with what fits, later requests keep it", async () => {
    // https://github.com/ggml-org/llama.cpp/pull/15780 (and the 400 variant in
    // https://github.com/oobabooga/textgen/issues/7257).
    server.enqueue(
      {
        kind: "error",
        status: 400,
        body: {
          error: {
            code: 400,
            message:
              "the request exceeds the available context size. try increasing the context size or enable context shift",
            type: "exceed_context_size_error",
            n_prompt_tokens: 5600,
            n_ctx: 1024,
          },
        },
      },
      textReply("short answer"),
    );
    const window: ModelWindow = { tokens: 16_384, source: "default" };
    const recovery = createContextRecovery({ counter: createTokenCounter(), window });
    const streamFn = createOpenAIStreamFn({ maxRetries: 0, onContextExceeded: recovery });
    const stream = await streamFn(fakeModel(server), { systemPrompt: "", messages: history }, {});
    const message = await stream.result();
    expect(message.errorMessage).toBeUndefined();
    expect(message.content).toEqual([{ type: "text", text: "short answer" }]);
    expect(window).toEqual({ tokens: 1024, source: "server error" });
    const retried = server.requests[1]?.body as { messages: { content: string }[] };
    expect(retried.messages.map((m) => m.content)).toEqual(["the latest question"]);
  });

  it("a stop while the context is being cut ends the request aborted: the smaller request is never sent", async () => {
    server.enqueue(
      {
        kind: "error",
        status: 400,
        body: {
          error: {
            message: "the request exceeds the available context size",
            type: "exceed_context_size_error",
            n_ctx: 1024,
          },
        },
      },
      textReply("must not be asked"),
    );
    const controller = new AbortController();
    const streamFn = createOpenAIStreamFn({
      maxRetries: 0,
      onContextExceeded: ({ context }) => {
        controller.abort(); // the user stops the run while the thread is shrunk
        return { ...context, messages: context.messages.slice(-1) };
      },
    });
    const stream = await streamFn(
      fakeModel(server),
      { systemPrompt: "", messages: history },
      { signal: controller.signal },
    );
    const message = await stream.result();
    expect(message.stopReason).toBe("aborted");
    expect(server.requests).toHaveLength(1);
  });

  it("OpenAI / vLLM wording without a hook fails with a readable sentence naming the window", async () => {
    server.enqueue({
      kind: "error",
      status: 400,
      body: {
        object: "error",
        type: "BadRequestError",
        message:
          "This model's maximum context length is 4096 tokens. However, you requested 4348 tokens (4332 in the messages, 16 in the completion). Please reduce the length of the messages or completion.",
        code: 400,
      },
    });
    const stream = await createOpenAIStreamFn({ maxRetries: 0 })(
      fakeModel(server),
      { systemPrompt: "", messages: history },
      {},
    );
    const message = await stream.result();
    expect(message.errorMessage).toBe(
      "The conversation is too long for the model's context window (4096 tokens; the request had 4332).",
    );
    expect(server.requests).toHaveLength(1);
  });
});
