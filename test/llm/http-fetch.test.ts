import { afterEach, describe, expect, it } from "vitest";
import { createHttpFetch, type HttpFetch } from "../../src/llm/index.js";
import { chunks, FakeOpenAIServer, textReply } from "../fakes/openai-server.js";

let server: FakeOpenAIServer | undefined;
let fetchImpl: HttpFetch | undefined;

afterEach(async () => {
  fetchImpl?.destroy();
  await server?.close();
  server = undefined;
});

async function readAll(body: unknown): Promise<string> {
  const parts: Buffer[] = [];
  for await (const part of body as AsyncIterable<Uint8Array>) parts.push(Buffer.from(part));
  return Buffer.concat(parts).toString("utf8");
}

// The stream function's default fetch sends chat completions through undici's `dispatcher.request`
// instead of `fetch`: these pin what the SDK relies on from it.
describe("createHttpFetch", () => {
  it("streams answers over one kept-alive connection", async () => {
    server = await FakeOpenAIServer.start();
    fetchImpl = createHttpFetch();
    server.enqueue(textReply("hello"), textReply("again"));
    const post = () => fetchImpl!(`${server!.baseURL}/chat/completions`, { method: "POST", body: "{}" });
    expect(await readAll((await post()).body)).toContain("data: [DONE]");
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await readAll((await post()).body)).toContain("data: [DONE]");
    expect(server.connections).toBe(1);
  });

  it("reads JSON bodies, status and response headers", async () => {
    server = await FakeOpenAIServer.start();
    fetchImpl = createHttpFetch();
    server.handler = () => ({
      kind: "json",
      status: 404,
      body: { error: { message: "no such model" } },
      headers: { "x-request-id": "req_1" },
    });
    const response = await fetchImpl(`${server.baseURL}/chat/completions?x=1`, {
      method: "POST",
      headers: new Headers({ "content-type": "application/json", authorization: "Bearer sk-1" }),
      body: JSON.stringify({ ping: true }),
    });
    expect(response.status).toBe(404);
    expect(response.ok).toBe(false);
    expect(response.headers.get("X-Request-Id")).toBe("req_1");
    expect(await response.json()).toEqual({ error: { message: "no such model" } });
    expect(server.requests[0]?.body).toEqual({ ping: true });
    expect(server.requests[0]?.headers.authorization).toBe("Bearer sk-1");
  });

  it("an abort while the body streams ends the body with an AbortError and closes the request", async () => {
    server = await FakeOpenAIServer.start();
    fetchImpl = createHttpFetch();
    server.enqueue({ kind: "stream", chunks: [chunks.role(), chunks.text("partial")], hangAfter: 1 });
    const controller = new AbortController();
    const response = await fetchImpl(`${server.baseURL}/chat/completions`, {
      method: "POST",
      body: "{}",
      signal: controller.signal,
    });
    expect(response.status).toBe(200);
    const reading = readAll(response.body);
    await server.waitForRequests(1);
    setTimeout(() => controller.abort(), 20);
    await expect(reading).rejects.toMatchObject({ name: "AbortError" });
    await expect(server.requests[0]?.outcome).resolves.toBe("client-disconnected");
  });

  it("rejects with an AbortError when aborted before the response", async () => {
    server = await FakeOpenAIServer.start();
    fetchImpl = createHttpFetch();
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
  });

  it("follows a redirect as fetch does", async () => {
    server = await FakeOpenAIServer.start();
    fetchImpl = createHttpFetch();
    const target = `${server.baseURL.replace(/\/v1$/, "")}/v2/chat/completions`;
    let calls = 0;
    server.handler = () =>
      calls++ === 0
        ? { kind: "json", status: 307, body: {}, headers: { location: target } }
        : { kind: "json", body: { moved: true } };
    const response = await fetchImpl(`${server.baseURL}/chat/completions`, { method: "POST", body: "{}" });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ moved: true });
    expect(server.requests.map((r) => r.path)).toEqual(["/chat/completions", "/v2/chat/completions"]);
  });
});
