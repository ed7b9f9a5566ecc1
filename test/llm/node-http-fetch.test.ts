import https from "node:https";
import { afterEach, describe, expect, it } from "vitest";
import { createNodeHttpFetch, type NodeHttpFetch } from "../../src/llm/index.js";
import { FakeOpenAIServer, textReply } from "../fakes/openai-server.js";
import { request } from "./helpers.js";
import { TEST_TLS } from "./tls-fixture.js";

let server: FakeOpenAIServer | undefined;
let fetchImpl: NodeHttpFetch | undefined;

afterEach(async () => {
  fetchImpl?.destroy();
  await server?.close();
  server = undefined;
});

describe("createNodeHttpFetch", () => {
  it("streams over HTTPS with a trusted CA and keeps the connection alive", async () => {
    server = await FakeOpenAIServer.start({ tls: TEST_TLS });
    fetchImpl = createNodeHttpFetch({ httpsAgent: new https.Agent({ keepAlive: true, ca: TEST_TLS.cert }) });
    server.enqueue(textReply("secure hello"), textReply("again"));
    const first = await request(server, { provider: { fetch: fetchImpl } });
    const second = await request(server, { provider: { fetch: fetchImpl } });
    expect(server.baseURL).toMatch(/^https:/);
    expect(first.message.content).toEqual([{ type: "text", text: "secure hello" }]);
    expect(second.message.content).toEqual([{ type: "text", text: "again" }]);
    expect(server.connections).toBe(1);
  });

  it("refuses an untrusted certificate with a readable message", async () => {
    server = await FakeOpenAIServer.start({ tls: TEST_TLS });
    server.enqueue(textReply("never"));
    const { message } = await request(server);
    expect(message.stopReason).toBe("error");
    expect(message.errorMessage).toBe(
      `Could not reach the model server at ${server.baseURL} (TLS certificate problem).`,
    );
  });

  it("reads JSON bodies and response headers for non-streaming calls", async () => {
    server = await FakeOpenAIServer.start();
    fetchImpl = createNodeHttpFetch();
    server.handler = () => ({ kind: "json", body: { hello: "world" }, headers: { "x-request-id": "req_1" } });
    const response = await fetchImpl(`${server.baseURL}/anything`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ ping: true }),
    });
    expect(response.status).toBe(200);
    expect(response.ok).toBe(true);
    expect(response.headers.get("X-Request-Id")).toBe("req_1");
    expect(await response.json()).toEqual({ hello: "world" });
    expect(server.requests[0]?.body).toEqual({ ping: true });
    expect(server.requests[0]?.headers["content-type"]).toBe("application/json");
  });

  it("rejects with an AbortError when aborted before the response", async () => {
    server = await FakeOpenAIServer.start();
    fetchImpl = createNodeHttpFetch();
    server.enqueue({ kind: "hang" });
    const controller = new AbortController();
    const pending = fetchImpl(`${server.baseURL}/chat/completions`, {
      method: "POST",
      body: "{}",
      signal: controller.signal,
    });
    await server.waitForRequests(1);
    controller.abort();
    await expect(pending).rejects.toMatchObject({ name: "AbortError" });
    await expect(server.requests[0]?.outcome).resolves.toBe("client-disconnected");
  });
});
