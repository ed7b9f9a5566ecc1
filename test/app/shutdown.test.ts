import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { FakeOpenAIServer } from "../fakes/openai-server.js";
import { freePort } from "../support/net.js";
import { PrivateRedis } from "../support/private-redis.js";
import { CliChild, eventually, processesIn } from "./cli-child.js";

/** Slack on top of a deadline: process start-up of tsx and Node, not the shutdown's own time. */
const SLACK_MS = 5000;

describe("stopping threadline", () => {
  let model: FakeOpenAIServer;
  let dir: string;
  const children: CliChild[] = [];

  beforeAll(async () => {
    model = await FakeOpenAIServer.start();
    // Every answer hangs: a run is in flight whenever the test stops the process.
    model.handler = (request) => (request.path === "/chat/completions" ? { kind: "hang" } : undefined);
  });
  afterAll(async () => {
    await model.close();
  });
  afterEach(async () => {
    for (const child of children.splice(0)) child.kill();
    // Whatever the outcome, no redis-server of this test may outlive it.
    for (const pid of await processesIn(join(dir, ".threadline"))) process.kill(pid, "SIGKILL");
    await rm(dir, { recursive: true, force: true });
  });

  /** `threadline start` without REDIS_URL (a private redis-server) in a fresh folder, a run in flight. */
  async function startWithRun(deadlineMs: number): Promise<CliChild> {
    dir = await mkdtemp(join(tmpdir(), "threadline-shutdown-"));
    const port = await freePort();
    const cli = CliChild.spawn("start", dir, {
      OPENAI_BASE_URL: model.baseURL,
      OPENAI_API_KEY: "sk-test",
      OPENAI_MODEL: "fake-model",
      PLAYGROUND_PORT: String(port),
      OPS_PORT: "0",
      SHUTDOWN_TIMEOUT_MS: String(deadlineMs),
      LOG_LEVEL: "info",
    });
    children.push(cli);
    await cli.waitForLine("gateway receiving events");
    const chats = () => model.requests.filter((request) => request.path === "/chat/completions").length;
    const before = chats();
    await fetch(`http://127.0.0.1:${port}/api/threads`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ user: { id: "u-ada", name: "Ada" }, text: "@Threadline hello" }),
    });
    expect(await eventually(async () => chats() > before, 30_000), "the run is waiting for the model").toBe(
      true,
    );
    expect(await processesIn(join(dir, ".threadline"))).toHaveLength(1);
    return cli;
  }

  it("Ctrl-C during a run stops `start` and its private redis-server within the deadline", async () => {
    const cli = await startWithRun(3000);
    cli.ctrlC();
    expect(await cli.exitWithin(3000 + SLACK_MS)).toEqual({ code: 0, signal: null });
    expect(await processesIn(join(dir, ".threadline"))).toEqual([]);
  }, 90_000);

  it("after a crash (SIGKILL), the next start reuses the private redis-server it left: one per folder", async () => {
    const crashed = await startWithRun(3000);
    const [leftover] = await processesIn(join(dir, ".threadline"));
    crashed.signal("SIGKILL");
    await crashed.exited;
    expect(await processesIn(join(dir, ".threadline"))).toEqual([leftover]);

    const next = CliChild.spawn("start", dir, {
      OPENAI_BASE_URL: model.baseURL,
      OPENAI_API_KEY: "sk-test",
      PLAYGROUND_PORT: String(await freePort()),
      OPS_PORT: "0",
      SHUTDOWN_TIMEOUT_MS: "3000",
      LOG_LEVEL: "info",
    });
    children.push(next);
    await next.waitForLine("gateway receiving events");
    expect(next.lines.some((line) => line.includes("reusing the private redis-server"))).toBe(true);
    expect(await processesIn(join(dir, ".threadline"))).toEqual([leftover]);
    next.ctrlC();
    expect(await next.exitWithin(3000 + SLACK_MS)).toEqual({ code: 0, signal: null });
    expect(await processesIn(join(dir, ".threadline"))).toEqual([]);
  }, 90_000);

  it("a second Ctrl-C exits at once, long before the deadline, and still stops the private redis-server", async () => {
    const cli = await startWithRun(300_000);
    cli.ctrlC();
    await cli.waitForLine("press Ctrl-C again");
    cli.ctrlC();
    expect(await cli.exitWithin(SLACK_MS)).toEqual({ code: 130, signal: null });
    expect(
      await eventually(async () => (await processesIn(join(dir, ".threadline"))).length === 0, 5000),
    ).toBe(true);
  }, 90_000);
});

describe("stopping a worker or gateway whose Redis went away", () => {
  let redis: PrivateRedis;
  let model: FakeOpenAIServer;
  const children: CliChild[] = [];

  beforeAll(async () => {
    redis = await PrivateRedis.start();
    model = await FakeOpenAIServer.start();
    model.handler = (request) => (request.path === "/chat/completions" ? { kind: "hang" } : undefined);
  });
  afterAll(async () => {
    for (const child of children.splice(0)) child.kill();
    await redis.down();
    await model.close();
  });

  it("`threadline worker` (a run in flight) and `threadline gateway` exit on SIGTERM within the deadline", async () => {
    const port = await freePort();
    const env = {
      REDIS_URL: redis.url,
      THREADLINE_PREFIX: "tl-shutdown",
      OPENAI_BASE_URL: model.baseURL,
      OPENAI_API_KEY: "sk-test",
      OPENAI_MODEL: "fake-model",
      PLAYGROUND_PORT: String(port),
      OPS_PORT: "0",
      SHUTDOWN_TIMEOUT_MS: "2000",
      LOG_LEVEL: "info",
    };
    const worker = CliChild.spawn("worker", tmpdir(), env);
    const gateway = CliChild.spawn("gateway", tmpdir(), env);
    children.push(worker, gateway);
    await Promise.all([
      worker.waitForLine("worker started"),
      gateway.waitForLine("gateway receiving events"),
    ]);
    await fetch(`http://127.0.0.1:${port}/api/threads`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ user: { id: "u-ada", name: "Ada" }, text: "@Threadline hello" }),
    });
    const chat = async () => model.requests.some((request) => request.path === "/chat/completions");
    expect(await eventually(chat, 30_000), "the run is waiting for the model").toBe(true);
    await redis.down();
    // What an orchestrator does: SIGTERM to each container's process, then wait for it to stop.
    worker.signal("SIGTERM");
    gateway.signal("SIGTERM");
    expect(await worker.exitWithin(2000 + SLACK_MS)).not.toBe("still running");
    expect(await gateway.exitWithin(2000 + SLACK_MS)).not.toBe("still running");
    // Stopped by the deadline, not crashed by the signal: each exits on its own.
    expect((await worker.exited).signal).toBeNull();
    expect((await gateway.exited).signal).toBeNull();
  }, 90_000);
});
