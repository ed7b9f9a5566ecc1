import { createServer } from "node:net";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { probeModelEndpoint } from "../../src/llm/openai/index.js";
import { FakeOpenAIServer } from "../fakes/openai-server.js";

let server: FakeOpenAIServer;

beforeEach(async () => {
  server = await FakeOpenAIServer.start();
  server.models = ["fake-model", "other-model"];
});

afterEach(async () => {
  await server.close();
});

const chatAnswer = {
  kind: "json" as const,
  body: {
    id: "chatcmpl-probe",
    object: "chat.completion",
    created: 0,
    model: "fake-model",
    choices: [{ index: 0, message: { role: "assistant", content: "p" }, finish_reason: "length" }],
  },
};

describe("probeModelEndpoint", () => {
  it("is ok when GET /models lists the model, without spending tokens", async () => {
    const result = await probeModelEndpoint({
      baseURL: server.baseURL,
      model: "fake-model",
      apiKey: "sk-probe",
    });
    expect(result).toEqual({
      ok: true,
      via: "models",
      models: ["fake-model", "other-model"],
      verdict: `Model "fake-model" is available at ${server.baseURL} (2 models listed).`,
    });
    expect(server.requests.map((r) => `${r.method} ${r.path}`)).toEqual(["GET /models"]);
    expect(server.requests[0]?.headers.authorization).toBe("Bearer sk-probe");
  });

  it("falls back to a 1-token chat request when the model is not listed", async () => {
    server.enqueue(chatAnswer);
    const result = await probeModelEndpoint({ baseURL: server.baseURL, model: "alias-model" });
    expect(result).toMatchObject({
      ok: true,
      via: "chat",
      verdict: `Model "alias-model" answered at ${server.baseURL} (although it is not in the endpoint's model list).`,
    });
    expect(server.requests[1]?.body).toEqual({
      model: "alias-model",
      messages: [{ role: "user", content: "ping" }],
      max_tokens: 1,
    });
  });

  it("lists what the endpoint offers when the model is missing", async () => {
    server.enqueue({ kind: "error", status: 404, message: "model not found" });
    const result = await probeModelEndpoint({ baseURL: server.baseURL, model: "gpt-9" });
    expect(result.ok).toBe(false);
    expect(result.verdict).toBe(
      `Model "gpt-9" is not served at ${server.baseURL}; it offers: fake-model, other-model.`,
    );
  });

  it("uses the chat request when the endpoint has no model list", async () => {
    server.modelsReply = { kind: "error", status: 404, body: "404 page not found" };
    server.enqueue(chatAnswer);
    const result = await probeModelEndpoint({ baseURL: server.baseURL, model: "fake-model" });
    expect(result).toEqual({
      ok: true,
      via: "chat",
      verdict: `Model "fake-model" answered at ${server.baseURL}.`,
    });
  });

  it("reports a rejected key from the model list without a chat request", async () => {
    server.modelsReply = { kind: "error", status: 401, message: "bad key sk-probe-secret" };
    const result = await probeModelEndpoint({
      baseURL: server.baseURL,
      model: "fake-model",
      apiKey: "sk-probe-secret",
    });
    expect(result).toMatchObject({
      ok: false,
      verdict: "The model provider rejected the API key (401). Check OPENAI_API_KEY.",
      failure: { kind: "auth", status: 401 },
    });
    expect(server.requests).toHaveLength(1);
  });

  it("reports an unreachable server", async () => {
    const listener = createServer();
    await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", resolve));
    const { port } = listener.address() as { port: number };
    await new Promise<void>((resolve) => listener.close(() => resolve()));
    const result = await probeModelEndpoint({ baseURL: `http://127.0.0.1:${port}/v1`, model: "m" });
    expect(result).toMatchObject({
      ok: false,
      verdict: `Could not reach the model server at http://127.0.0.1:${port}/v1 (connection refused).`,
      failure: { kind: "unreachable" },
    });
  });
});
