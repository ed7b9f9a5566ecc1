import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { PlaygroundSnapshot, PlaygroundThread } from "../../src/playground/index.js";
import { FakeOpenAIServer, textReply } from "../fakes/openai-server.js";
import { freePort } from "../support/net.js";
import { PrivateRedis } from "../support/private-redis.js";
import { CliProcess } from "../support/process.js";
import { uniquePrefix } from "../support/redis.js";

describe("a playground message sent while Redis restarts", () => {
  let redis: PrivateRedis;
  let openai: FakeOpenAIServer;
  let gateway: CliProcess | undefined;
  let worker: CliProcess | undefined;
  let url: string;

  beforeAll(async () => {
    redis = await PrivateRedis.start();
    openai = await FakeOpenAIServer.start();
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    const env = {
      REDIS_URL: redis.url,
      THREADLINE_PREFIX: uniquePrefix("pgoutage"),
      PLAYGROUND_PORT: String(port),
      OPS_PORT: "0",
      OPENAI_BASE_URL: openai.baseURL,
      OPENAI_API_KEY: "sk-test",
      OPENAI_MODEL: "fake-model",
      LOG_LEVEL: "info",
    };
    [worker, gateway] = await CliProcess.startAll([
      CliProcess.start("worker", env, "worker started", 60_000),
      CliProcess.start("gateway", env, "playground: open", 60_000),
    ]);
  }, 90_000);

  afterAll(async () => {
    await Promise.all([gateway?.stop(), worker?.stop()]);
    await openai?.close();
    await redis?.down();
  }, 30_000);

  it("is answered once Redis is back (the request waits; nothing is lost) and starts exactly one run", async () => {
    openai.enqueue(textReply("Stored and answered."));
    await redis.down();
    const sent = fetch(`${url}/api/threads`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ user: { id: "u-ada", name: "Ada" }, text: "@Threadline are you there?" }),
    });
    // The outage: the message arrives while Redis is away for a few seconds.
    await new Promise((resolve) => setTimeout(resolve, 2500));
    await redis.up();
    const response = await sent;
    expect(response.status).toBe(200);
    const { thread } = (await response.json()) as { thread: PlaygroundThread };
    let snapshot: PlaygroundSnapshot | undefined;
    const deadline = Date.now() + 20_000;
    for (;;) {
      snapshot = (await (await fetch(`${url}/api/threads/${thread.id}`)).json()) as PlaygroundSnapshot;
      if (snapshot.messages.some((m) => m.kind === "bot" && m.text.includes("Stored and answered."))) break;
      if (Date.now() > deadline) throw new Error(`no answer: ${JSON.stringify(snapshot)}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const chat = openai.requests.filter((request) => request.path === "/chat/completions");
    expect(chat).toHaveLength(1);
    expect(snapshot.messages.filter((m) => m.kind === "user")).toHaveLength(1);
    expect(snapshot.messages[0]?.reactions.map((reaction) => reaction.emoji)).not.toContain("warning");
  }, 60_000);
});
