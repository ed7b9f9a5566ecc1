import { Agent } from "undici";
import { afterEach, describe, expect, it } from "vitest";
import { createHttpFetch, type HttpFetch } from "../../src/http/index.js";
import { createSlackClient } from "../../src/slack/api.js";
import { chunks, FakeOpenAIServer, textReply } from "../fakes/openai-server.js";
import { FakeSlackServer } from "../fakes/slack-server.js";
import { request } from "../llm/helpers.js";
import { TEST_TLS } from "./tls-fixture.js";

let server: FakeOpenAIServer | undefined;
let fetchImpl: HttpFetch | undefined;
let dispatcher: Agent | undefined;
let slack: FakeSlackServer | undefined;

afterEach(async () => {
  fetchImpl?.destroy();
  await dispatcher?.close();
  await server?.close();
  await slack?.close();
  fetchImpl = undefined;
  dispatcher = undefined;
  server = undefined;
  slack = undefined;
});

async function readAll(body: unknown): Promise<string> {
  const parts: Buffer[] = [];
  for await (const part of body as AsyncIterable<Uint8Array>) parts.push(Buffer.from(part));
  return Buffer.concat(parts).toString("utf8");
}

async function start(): Promise<{ server: FakeOpenAIServer; fetchImpl: HttpFetch }> {
  server = await FakeOpenAIServer.start();
  fetchImpl = createHttpFetch();
  return { server, fetchImpl };
}

// The one fetch of the model client and of Slack's Web API client: string and byte bodies go through
// undici's `dispatcher.request` instead of `fetch`. These pin what the SDKs rely on from it.
describe("createHttpFetch", () => {
  it("streams answers over one kept-alive connection", async () => {
    const { server, fetchImpl } = await start();
    server.enqueue(textReply("hello"), textReply("again"));
    const post = () => fetchImpl(`${server.baseURL}/chat/completions`, { method: "POST", body: "{}" });
    const first = await post();
    expect(first.status).toBe(200);
    expect(first.ok).toBe(true);
    expect(await readAll(first.body)).toContain("data: [DONE]");
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await readAll((await post()).body)).toContain("data: [DONE]");
    expect(server.connections).toBe(1);
  });

  it("streams over HTTPS with a dispatcher's trusted CA and keeps the connection alive", async () => {
    server = await FakeOpenAIServer.start({ tls: TEST_TLS });
    dispatcher = new Agent({ connect: { ca: TEST_TLS.cert } });
    fetchImpl = createHttpFetch({ dispatcher });
    server.enqueue(textReply("secure hello"), textReply("again"));
    const first = await request(server, { provider: { fetch: fetchImpl } });
    // The SDK is done at `data: [DONE]`, a moment before the pool has the connection back.
    await new Promise((resolve) => setTimeout(resolve, 50));
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

  it("reads JSON bodies, status and response headers", async () => {
    const { server, fetchImpl } = await start();
    server.handler = () => ({
      kind: "json",
      status: 404,
      body: { error: { message: "no such model" } },
      headers: { "x-request-id": "req_1" },
    });
    const response = await fetchImpl(`${server.baseURL}/chat/completions?x=1`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: new TextEncoder().encode(JSON.stringify({ ping: true })),
    });
    expect(response.status).toBe(404);
    expect(response.ok).toBe(false);
    expect(response.headers.get("X-Request-Id")).toBe("req_1");
    expect(Object.fromEntries(response.headers.entries())).toMatchObject({ "x-request-id": "req_1" });
    expect(await response.json()).toEqual({ error: { message: "no such model" } });
    expect(server.requests[0]?.body).toEqual({ ping: true });
  });

  it.each([
    ["a Headers", (h: Record<string, string>) => new Headers(h)],
    ["pairs", (h: Record<string, string>) => Object.entries(h)],
    ["a record", (h: Record<string, string>) => h],
  ])("sends request headers given as %s, without Accept-Encoding", async (_shape, shape) => {
    const { server, fetchImpl } = await start();
    server.handler = () => ({ kind: "json", body: {} });
    const headers = {
      "content-type": "application/json",
      authorization: "Bearer sk-1",
      "accept-encoding": "gzip",
    };
    const response = await fetchImpl(`${server.baseURL}/anything`, {
      method: "POST",
      headers: shape(headers),
      body: "{}",
    });
    await response.text();
    expect(server.requests[0]?.headers).toMatchObject({
      "content-type": "application/json",
      authorization: "Bearer sk-1",
    });
    expect(server.requests[0]?.headers["accept-encoding"]).toBeUndefined();
  });

  it("an abort while the body streams ends the body with an AbortError and closes the request", async () => {
    const { server, fetchImpl } = await start();
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

  it("rejects with an AbortError when aborted before the response, and closes the request", async () => {
    const { server, fetchImpl } = await start();
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

  it("fails the body when the connection is lost mid-way", async () => {
    const { server, fetchImpl } = await start();
    server.enqueue({
      kind: "stream",
      chunks: [chunks.role(), chunks.text("partial"), chunks.text("more")],
      dropAfter: 1,
    });
    const response = await fetchImpl(`${server.baseURL}/chat/completions`, { method: "POST", body: "{}" });
    expect(response.status).toBe(200);
    await expect(readAll(response.body)).rejects.toThrow();
  });

  it("follows a redirect as fetch does", async () => {
    const { server, fetchImpl } = await start();
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

  it('rejects a redirect under redirect: "error" without following it, as fetch does', async () => {
    const { server, fetchImpl } = await start();
    const target = `${server.baseURL}/elsewhere`;
    server.handler = (received) =>
      received.path === "/elsewhere"
        ? { kind: "json", body: { moved: true } }
        : { kind: "json", status: 302, body: {}, headers: { location: target } };
    const pending = fetchImpl(`${server.baseURL}/chat.postMessage`, {
      method: "POST",
      body: "text=hi",
      redirect: "error",
    });
    await expect(pending).rejects.toMatchObject({ name: "TypeError", message: "fetch failed" });
    expect(server.requests.map((r) => r.path)).toEqual(["/chat.postMessage"]);
  });

  it('returns a redirect under redirect: "manual"', async () => {
    const { server, fetchImpl } = await start();
    server.handler = () => ({ kind: "json", status: 301, body: {}, headers: { location: "/elsewhere" } });
    const response = await fetchImpl(`${server.baseURL}/models`, { redirect: "manual" });
    expect(response.status).toBe(301);
    expect(response.headers.get("location")).toBe("/elsewhere");
    expect(server.requests).toHaveLength(1);
  });

  it("sends a FormData body (an upload) through fetch", async () => {
    const { server, fetchImpl } = await start();
    server.handler = () => ({ kind: "json", body: { ok: true } });
    const form = new FormData();
    form.append("file", new Blob(["file bytes"]), "notes.txt");
    const response = await fetchImpl(`${server.baseURL}/files.upload`, { method: "POST", body: form });
    expect(await response.json()).toEqual({ ok: true });
    expect(server.requests[0]?.headers["content-type"]).toMatch(/^multipart\/form-data; boundary=/);
    expect(String(server.requests[0]?.body)).toContain("file bytes");
  });

  it("serves Slack's Web API client: form-encoded calls, JSON results, a 429 retried after Retry-After", async () => {
    slack = await FakeSlackServer.start();
    fetchImpl = createHttpFetch();
    const client = createSlackClient({
      token: slack.config.botToken,
      apiUrl: slack.apiUrl,
      fetch: fetchImpl as never,
      retry: { retries: 2, minTimeout: 1, maxTimeout: 10 },
    });
    slack.failNext("chat.postMessage", { status: 429, retryAfterSeconds: 0 });
    const posted = await client.chat.postMessage({ channel: "C0GENERAL", text: "hello from undici" });
    expect(posted.ok).toBe(true);
    expect(slack.callsOf("chat.postMessage").map((call) => call.outcome)).toEqual(["ratelimited", "ok"]);
    expect(slack.callsOf("chat.postMessage")[1]?.args).toMatchObject({ text: "hello from undici" });
    const replies = await client.conversations.replies({ channel: "C0GENERAL", ts: String(posted.ts) });
    expect(replies.messages?.map((message) => message.text)).toEqual(["hello from undici"]);
  });
});
