import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseEnv } from "../../src/app/env.js";
import { wantsPlayground } from "../../src/app/platforms.js";
import type { PlaygroundSnapshot, PlaygroundThread } from "../../src/playground/index.js";
import { CliProcess } from "../support/process.js";
import { connect, deletePrefix, redisEnv, requireRedis, uniquePrefix } from "../support/redis.js";
import { EventStream, freePort } from "./helpers.js";

describe("which platforms start", () => {
  it("serves the playground without Slack and Discord credentials, or when PLAYGROUND=1", () => {
    expect(wantsPlayground(parseEnv({}))).toBe(true);
    expect(wantsPlayground(parseEnv({ DISCORD_TOKEN: "token" }))).toBe(false);
    expect(wantsPlayground(parseEnv({ SLACK_BOT_TOKEN: "xoxb-1", SLACK_APP_TOKEN: "xapp-1" }))).toBe(false);
    expect(wantsPlayground(parseEnv({ DISCORD_TOKEN: "token", PLAYGROUND: "1" }))).toBe(true);
  });
});

describe("gateway and worker processes without any credentials or model", () => {
  const prefix = uniquePrefix("pgcli");
  const redis = connect();
  let gateway: CliProcess | undefined;
  let worker: CliProcess | undefined;
  let url: string;

  beforeAll(async () => {
    await requireRedis(redis);
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    // Exactly these variables: no OPENAI_*, no SLACK_*, no DISCORD_*.
    const env = {
      ...redisEnv(),
      THREADLINE_PREFIX: prefix,
      PLAYGROUND_PORT: String(port),
      LOG_LEVEL: "info",
    };
    // startAll stops the one that started when the other fails, so no process is left holding a port.
    [worker, gateway] = (await CliProcess.startAll([
      CliProcess.start("worker", env, "worker started", 60_000),
      CliProcess.start("gateway", env, "playground: open", 60_000),
    ])) as [CliProcess, CliProcess];
  }, 90_000);

  afterAll(async () => {
    await Promise.all([gateway?.stop(), worker?.stop()]);
    await deletePrefix(redis, prefix);
    redis.disconnect();
  }, 30_000);

  it("start, serve the playground, and say exactly what to set — in the log, on the page and in the chat", async () => {
    const hint = [
      "No model is configured. Set OPENAI_API_KEY, or OPENAI_BASE_URL for a local server such as Ollama",
      "(OPENAI_BASE_URL=http://localhost:11434/v1 and OPENAI_MODEL=llama3.1), then restart Threadline.",
    ].join(" ");
    expect(gateway!.logs("No model is configured").map((line) => line.msg)).toEqual([hint]);

    const info = (await (await fetch(`${url}/api/info`)).json()) as { notice: string | null };
    expect(info.notice).toBe(hint);

    const events = await EventStream.open(`${url}/api/events`);
    try {
      const created = await fetch(`${url}/api/threads`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ user: { id: "u-ada", name: "Ada" }, text: "@Threadline hello" }),
      });
      const { thread } = (await created.json()) as { thread: PlaygroundThread };
      // The worker process answers through Redis; the gateway process pushes it to the browser.
      await events.waitFor((received) =>
        received.some(
          (event) => event.type === "status" && event.thread === thread.id && event.status === null,
        ),
      );
      const snapshot = (await (await fetch(`${url}/api/threads/${thread.id}`)).json()) as PlaygroundSnapshot;
      const bot = snapshot.messages.filter((message) => message.kind === "bot");
      expect(bot).toHaveLength(1);
      const shown = bot[0]!.text.replaceAll("\\", "");
      expect(shown.split("\n")[0]).toBe(`⚠️ ${hint}`);
      expect(snapshot.messages[0]?.reactions.map((reaction) => reaction.emoji)).toEqual(["eyes"]);
    } finally {
      events.close();
    }
  }, 60_000);
});
