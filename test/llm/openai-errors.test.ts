import { createServer } from "node:net";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createOpenAIStreamFn, type OpenAIFetch, type OpenAIProviderOptions } from "../../src/llm/index.js";
import { chunks, FakeOpenAIServer, textReply } from "../fakes/openai-server.js";
import { drain, fakeModel, request, user } from "./helpers.js";

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address() as { port: number };
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

const longText = textReply("x".repeat(400), { pieceSize: 1 });

/** The failure behaviour must not depend on the HTTP client under the SDK. */
const fetchImplementations: [string, OpenAIFetch | undefined][] = [
  ["default fetch (undici Agent)", undefined],
  ["global fetch", globalThis.fetch],
];

describe.each(fetchImplementations)("openai stream function failures (%s)", (_name, fetchImpl) => {
  let server: FakeOpenAIServer;
  const provider = (extra: OpenAIProviderOptions = {}): OpenAIProviderOptions =>
    fetchImpl ? { fetch: fetchImpl, ...extra } : extra;

  beforeEach(async () => {
    server = await FakeOpenAIServer.start();
  });

  afterEach(async () => {
    await server.close();
  });

  it("401: a human message that never contains the key, even when the server echoes it", async () => {
    server.enqueue({ kind: "error", status: 401, message: "Incorrect API key provided: sk-test-key" });
    const { types, message } = await request(server, { provider: provider() });
    expect(types).toEqual(["error"]);
    expect(message.stopReason).toBe("error");
    expect(message.errorMessage).toBe("The model provider rejected the API key (401). Check OPENAI_API_KEY.");
    expect(JSON.stringify(message)).not.toContain("sk-test-key");
  });

  it("401 names the configured key source", async () => {
    server.enqueue({ kind: "error", status: 401 });
    const { message } = await request(server, { provider: provider({ apiKeyHint: "THREADLINE_MODEL_KEY" }) });
    expect(message.errorMessage).toBe(
      "The model provider rejected the API key (401). Check THREADLINE_MODEL_KEY.",
    );
  });

  it("404: names the model and the base URL", async () => {
    server.enqueue({ kind: "error", status: 404, message: "The model `nope` does not exist" });
    const { message } = await request(server, {
      provider: provider(),
      model: fakeModel(server, { id: "nope" }),
    });
    expect(message.errorMessage).toBe(
      `Model "nope" was not found at ${server.baseURL} (404). Check the model name and base URL.`,
    );
  });

  it("429 with retry-after: says when to retry", async () => {
    server.enqueue({ kind: "error", status: 429, headers: { "retry-after": "12" }, message: "slow down" });
    const { message } = await request(server, { provider: provider() });
    expect(message.errorMessage).toBe("Rate limited by the model provider (429); retry after 12s.");
  });

  it("429 without retry-after, and 429 for an exhausted quota", async () => {
    server.enqueue(
      { kind: "error", status: 429 },
      { kind: "error", status: 429, code: "insufficient_quota", message: "You exceeded your current quota" },
    );
    expect((await request(server, { provider: provider() })).message.errorMessage).toBe(
      "Rate limited by the model provider (429). Try again in a moment.",
    );
    expect((await request(server, { provider: provider() })).message.errorMessage).toBe(
      "The model provider account has run out of quota (429). Check the plan and billing details.",
    );
  });

  it("5xx: internal error and unavailable", async () => {
    server.enqueue(
      { kind: "error", status: 500, body: "" },
      { kind: "error", status: 503, message: "overloaded" },
    );
    expect((await request(server, { provider: provider() })).message.errorMessage).toBe(
      `The model server at ${server.baseURL} had an internal error (500). Try again later.`,
    );
    expect((await request(server, { provider: provider() })).message.errorMessage).toBe(
      `The model server at ${server.baseURL} is unavailable (503). Try again later. It said: overloaded`,
    );
  });

  it("400: quotes the provider's explanation", async () => {
    server.enqueue({
      kind: "error",
      status: 400,
      message: "The 'temperature' parameter must be between 0 and 2.",
    });
    const { message } = await request(server, { provider: provider() });
    expect(message.errorMessage).toBe(
      "The model provider rejected the request (400): The 'temperature' parameter must be between 0 and 2.",
    );
  });

  it("retries 5xx and 429 when retries are configured, honouring retry-after-ms", async () => {
    server.enqueue(
      { kind: "error", status: 503, headers: { "retry-after-ms": "1" } },
      { kind: "error", status: 429, headers: { "retry-after-ms": "1" } },
      textReply("finally"),
    );
    const { message } = await request(server, { provider: provider({ maxRetries: 2 }) });
    expect(message.stopReason).toBe("stop");
    expect(message.content).toEqual([{ type: "text", text: "finally" }]);
    expect(server.requests).toHaveLength(3);
  });

  it("per-request maxRetries overrides the provider's", async () => {
    server.enqueue({ kind: "error", status: 500, headers: { "retry-after-ms": "1" } }, textReply("ok"));
    const { message } = await request(server, {
      provider: provider({ maxRetries: 0 }),
      stream: { maxRetries: 1 },
    });
    expect(message.stopReason).toBe("stop");
    expect(server.requests).toHaveLength(2);
  });

  it("connection refused", async () => {
    const port = await closedPort();
    const baseUrl = `http://127.0.0.1:${port}/v1`;
    const { types, message } = await request(server, {
      provider: provider(),
      model: fakeModel(server, { baseUrl }),
    });
    expect(types).toEqual(["error"]);
    expect(message.errorMessage).toBe(`Could not reach the model server at ${baseUrl} (connection refused).`);
  });

  it("the server closes the connection without answering", async () => {
    server.enqueue({ kind: "drop" });
    const { message } = await request(server, { provider: provider() });
    expect(message.errorMessage).toBe(
      `The model server at ${server.baseURL} closed the connection before answering.`,
    );
  });

  it("timeout waiting for the response", async () => {
    server.enqueue({ kind: "hang" });
    const { message } = await request(server, { provider: provider({ timeoutMs: 150 }) });
    expect(message.stopReason).toBe("error");
    expect(message.errorMessage).toBe(
      `The model server at ${server.baseURL} did not answer within 150 ms (timeout).`,
    );
    await expect(server.requests[0]?.outcome).resolves.toBe("client-disconnected");
  });

  it("stream cut mid-way: keeps the partial text, no text_end", async () => {
    server.enqueue({
      kind: "stream",
      chunks: [chunks.role(), chunks.text("Hel"), chunks.text("lo")],
      dropAfter: 3,
    });
    const { types, message } = await request(server, { provider: provider() });
    expect(types).toEqual(["start", "text_start", "text_delta", "text_delta", "error"]);
    expect(message.stopReason).toBe("error");
    expect(message.errorMessage).toBe("The model stream was cut off before it finished.");
    expect(message.content).toEqual([{ type: "text", text: "Hello" }]);
  });

  it("stream cut inside a tool call: arguments settle to what arrived", async () => {
    server.enqueue({
      kind: "stream",
      chunks: [chunks.toolCall(0, { id: "c1", name: "write", arguments: '{"path": "a.txt", "body": "par' })],
      dropAfter: 1,
    });
    const { types, message } = await request(server, { provider: provider() });
    expect(types).toEqual(["start", "toolcall_start", "toolcall_delta", "error"]);
    expect(message.content).toEqual([
      { type: "toolCall", id: "c1", name: "write", arguments: { path: "a.txt", body: "par" } },
    ]);
    expect(Object.getOwnPropertyDescriptor(message.content[0], "arguments")?.get).toBeUndefined();
  });

  it("an error event inside the stream", async () => {
    server.enqueue({
      kind: "stream",
      chunks: [
        chunks.text("Hi"),
        { raw: 'data: {"error":{"message":"Upstream overloaded","type":"server_error"}}\n\n' },
      ],
    });
    const { message } = await request(server, { provider: provider() });
    expect(message.errorMessage).toBe("The model provider reported an error mid-answer: Upstream overloaded");
    expect(message.content).toEqual([{ type: "text", text: "Hi" }]);
  });

  it("a malformed stream event", async () => {
    server.enqueue({ kind: "stream", chunks: [chunks.text("Hi"), { raw: "data: {not json\n\n" }] });
    const { message } = await request(server, { provider: provider() });
    expect(message.errorMessage).toBe("The model server sent a malformed stream event.");
  });

  it("abort mid-stream: aborted message, and the server sees the client disconnect", async () => {
    server.enqueue({ ...longText, delayMs: 5 });
    const controller = new AbortController();
    const streamFn = createOpenAIStreamFn(provider({ maxRetries: 0 }));
    const stream = await streamFn(
      fakeModel(server),
      { systemPrompt: "", messages: [user("hi")] },
      { signal: controller.signal },
    );
    const types: string[] = [];
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === "text_delta" && event.partial.content.length > 0) controller.abort();
    }
    const message = await stream.result();
    expect(message.stopReason).toBe("aborted");
    expect(message.errorMessage).toBe("Request was aborted");
    expect(types.slice(0, 3)).toEqual(["start", "text_start", "text_delta"]);
    expect(types.at(-1)).toBe("error");
    expect(types).not.toContain("text_end");
    await expect(server.requests[0]?.outcome).resolves.toBe("client-disconnected");
    expect(server.requests[0]?.chunksWritten).toBeLessThan(402);
  });

  it("abort while waiting for the response headers", async () => {
    server.enqueue({ kind: "hang" });
    const controller = new AbortController();
    const streamFn = createOpenAIStreamFn(provider({ maxRetries: 0 }));
    const pending = drain(
      await streamFn(
        fakeModel(server),
        { systemPrompt: "", messages: [user("hi")] },
        { signal: controller.signal },
      ),
    );
    await server.waitForRequests(1);
    controller.abort();
    const { types, message } = await pending;
    expect(types).toEqual(["error"]);
    expect(message).toMatchObject({
      stopReason: "aborted",
      errorMessage: "Request was aborted",
      content: [],
    });
    await expect(server.requests[0]?.outcome).resolves.toBe("client-disconnected");
  });

  it("an already-aborted signal sends no request", async () => {
    const controller = new AbortController();
    controller.abort();
    const { types, message } = await request(server, {
      provider: provider(),
      stream: { signal: controller.signal },
    });
    expect(types).toEqual(["error"]);
    expect(message.stopReason).toBe("aborted");
    expect(server.requests).toHaveLength(0);
  });

  it("idle timeout: a stream that stops sending is abandoned", async () => {
    server.enqueue({
      kind: "stream",
      chunks: [chunks.role(), chunks.text("Hi"), chunks.text("!")],
      hangAfter: 2,
    });
    const { message } = await request(server, { provider: provider({ idleTimeoutMs: 300 }) });
    expect(message.stopReason).toBe("error");
    expect(message.errorMessage).toBe(
      `No data from the model server at ${server.baseURL} for 300 ms; the answer was abandoned.`,
    );
    expect(message.content).toEqual([{ type: "text", text: "Hi" }]);
    await expect(server.requests[0]?.outcome).resolves.toBe("client-disconnected");
  });

  it("slow chunks within the idle timeout complete normally", async () => {
    server.enqueue({ ...textReply("slow but fine", { pieceSize: 5 }), delayMs: 20 });
    const { message } = await request(server, { provider: provider({ idleTimeoutMs: 5_000 }) });
    expect(message.stopReason).toBe("stop");
    expect(message.content).toEqual([{ type: "text", text: "slow but fine" }]);
  });
});

describe("openai stream function: failures before the request", () => {
  it("a tool schema that cannot be converted becomes an error message, not a throw", async () => {
    const server = await FakeOpenAIServer.start();
    try {
      const broken = { name: "broken", description: "", parameters: {} as never };
      const { types, message } = await request(server, { context: { tools: [broken] } });
      expect(types).toEqual(["error"]);
      expect(message.errorMessage).toMatch(/^Could not build the model request: /);
      expect(server.requests).toHaveLength(0);
    } finally {
      await server.close();
    }
  });
});
