import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { formatDoctorReport, runDoctor } from "../../src/app/doctor.js";
import { parseEnv } from "../../src/app/env.js";
import { FakeDiscordServer } from "../fakes/discord-server.js";
import { FakeOpenAIServer } from "../fakes/openai-server.js";
import { FakeSlackServer } from "../fakes/slack-server.js";
import { REDIS_URL } from "../support/redis.js";

let model: FakeOpenAIServer;
let slack: FakeSlackServer;
let discord: FakeDiscordServer;

beforeAll(async () => {
  model = await FakeOpenAIServer.start();
  slack = await FakeSlackServer.start();
  discord = await FakeDiscordServer.start();
});
afterAll(async () => {
  await model.close();
  await slack.close();
  await discord.close();
});

function env(overrides: Record<string, string>) {
  return parseEnv({
    REDIS_URL,
    OPENAI_BASE_URL: model.baseURL,
    OPENAI_API_KEY: "sk-test-doctor",
    OPENAI_MODEL: "fake-model",
    SLACK_BOT_TOKEN: "xoxb-test",
    SLACK_APP_TOKEN: "xapp-test",
    SLACK_API_URL: slack.apiUrl,
    DISCORD_TOKEN: "fake-discord-token",
    DISCORD_API_URL: discord.apiUrl,
    ...overrides,
  });
}

describe("threadline doctor", () => {
  it("passes every check against working services", async () => {
    const checks = await runDoctor(env({}));
    // The checks that ran (a platform this test does not configure is skipped).
    expect(checks.filter((c) => !c.skipped).map((c) => [c.name, c.ok])).toEqual([
      ["Redis", true],
      ["Model", true],
      ["Slack", true],
      ["Discord", true],
    ]);
    expect(formatDoctorReport(checks)).toContain("Everything needed is in place.");
  });

  it("says exactly what is wrong and how to fix it, without echoing secrets", async () => {
    // The model is not listed, so the probe asks for one token; the server says the model does not exist.
    model.enqueue({
      kind: "error",
      status: 404,
      code: "model_not_found",
      message: "The model does not exist",
    });
    const checks = await runDoctor(
      env({
        REDIS_URL: "redis://127.0.0.1:1",
        OPENAI_MODEL: "no-such-model",
        SLACK_BOT_TOKEN: "xoxb-wrong",
        DISCORD_TOKEN: "wrong-token",
      }),
    );
    const report = formatDoctorReport(checks);
    const ran = checks.filter((c) => !c.skipped);
    expect(ran.map((c) => c.name)).toEqual(["Redis", "Model", "Slack", "Discord"]);
    expect(ran.every((c) => !c.ok)).toBe(true);
    expect(report).toContain("✗ Redis");
    expect(report).toContain("Start Redis");
    expect(report).toContain("no-such-model");
    expect(report).toMatch(/SLACK_BOT_TOKEN is not valid/);
    expect(report).toMatch(/DISCORD_TOKEN is not valid/);
    expect(report).toContain("4 problems to fix.");
    expect(report).not.toContain("xoxb-wrong");
    expect(report).not.toContain("wrong-token");
    expect(report).not.toContain("sk-test-doctor");
  });

  it("explains how to configure a model when none is set, and skips platforms without credentials", async () => {
    const checks = await runDoctor(parseEnv({ REDIS_URL }));
    const report = formatDoctorReport(checks);
    expect(report).toContain("OPENAI_BASE_URL=http://localhost:11434/v1");
    expect(report).toContain("– Slack: not configured");
    expect(report).toContain("– Discord: not configured");
    expect(report).toContain("1 problem to fix.");
  });
});

describe("threadline doctor: the model settings in use", () => {
  it("names the model, the endpoint, the server's context window and the timeouts", async () => {
    model.modelFields = { meta: { n_ctx: 4096 } };
    try {
      const checks = await runDoctor(
        env({ OPENAI_IDLE_TIMEOUT_MS: "1500", OPENAI_HEADER_TIMEOUT_MS: "60000" }),
      );
      const check = checks.find((entry) => entry.name === "Model");
      expect(check?.ok).toBe(true);
      expect(check?.detail).toContain(
        `Using model fake-model at ${model.baseURL}; context window 4096 tokens (reported by the server); header timeout 60 s, idle timeout 1.5 s.`,
      );
    } finally {
      model.modelFields = {};
    }
  });
});

describe("threadline doctor: what `start` needs without REDIS_URL", () => {
  const redisCheck = async () => (await runDoctor(parseEnv({}))).find((check) => check.name === "Redis");

  it("fails, saying how to fix it, when no redis-server is installed to run privately", async () => {
    const path = process.env.PATH;
    process.env.PATH = "/nonexistent";
    try {
      const check = await redisCheck();
      expect(check?.ok).toBe(false);
      expect(check?.detail).toContain("no redis-server is installed");
      expect(check?.fix).toContain("apt-get install redis-server");
      expect(check?.fix).toContain("REDIS_URL=");
    } finally {
      process.env.PATH = path;
    }
  });

  it("names the redis-server's version even when its output arrives after the process exited", async () => {
    // A stand-in `redis-server` whose version line is written by a child it leaves behind: the process
    // exits first and its output comes after, as can happen with the real one under load.
    const bin = mkdtempSync(join(tmpdir(), "threadline-fake-redis-"));
    const fake = join(bin, "redis-server");
    writeFileSync(fake, '#!/bin/sh\n(sleep 0.3; echo "Redis server v=9.9.9 sha=00000000:0") &\nexit 0\n');
    chmodSync(fake, 0o755);
    const path = process.env.PATH;
    process.env.PATH = `${bin}:${path}`;
    try {
      const check = await redisCheck();
      expect(check?.ok).toBe(true);
      expect(check?.detail).toContain("runs a private redis-server (Redis server v=9.9.9 sha=00000000:0)");
    } finally {
      process.env.PATH = path;
      rmSync(bin, { recursive: true, force: true });
    }
  });

  it("passes, naming the redis-server it will run, when one is installed", async () => {
    const check = await redisCheck();
    expect(check?.ok).toBe(true);
    expect(check?.detail).toMatch(/runs a private redis-server \(Redis server v=\d/);
  });
});
