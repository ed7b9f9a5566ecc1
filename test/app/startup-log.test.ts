import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { agentSetupFromEnv } from "../../src/app/agent-setup.js";
import { parseEnv } from "../../src/config/index.js";
import { OPENAI_COMPLETIONS_API } from "../../src/llm/index.js";
import type { RunLogger } from "../../src/runs/index.js";
import { FakeOpenAIServer } from "../fakes/openai-server.js";
import { connect, deletePrefix, redisEnv, requireRedis, uniquePrefix } from "../support/redis.js";
import { CliChild } from "./cli-child.js";

interface Logged {
  level: "info" | "warn" | "error";
  fields: Record<string, unknown>;
  message: string;
}

function recordingLogger(): RunLogger & { lines: Logged[] } {
  const lines: Logged[] = [];
  return {
    lines,
    info: (fields, message) => lines.push({ level: "info", fields, message }),
    warn: (fields, message) => lines.push({ level: "warn", fields, message }),
    error: (fields, message) => lines.push({ level: "error", fields, message }),
  };
}

const ENV = {
  OPENAI_API_KEY: "sk-test",
  OPENAI_BASE_URL: "http://127.0.0.1:9/v1",
  OPENAI_MODEL: "qwen3:8b",
  OPENAI_HEADER_TIMEOUT_MS: "1500",
  OPENAI_IDLE_TIMEOUT_MS: "0",
};

describe("the start-up log", () => {
  it("logs the model, the endpoint and the timeouts in use", () => {
    const log = recordingLogger();
    agentSetupFromEnv(
      parseEnv({ ...ENV, OPENAI_BASE_URL: "https://user:pw@llm.example/v1?api-key=secret" }),
      [],
      {
        log,
      },
    );
    const line = log.lines.find((entry) => entry.message.startsWith("model "));
    expect(line).toEqual({
      level: "info",
      message: "model qwen3:8b at https://llm.example/v1; header timeout 1.5 s, idle timeout off",
      fields: expect.objectContaining({
        model: "qwen3:8b",
        api: OPENAI_COMPLETIONS_API,
        endpoint: "https://llm.example/v1",
        headerTimeoutMs: 1500,
        idleTimeoutMs: 0,
      }),
    });
    expect(JSON.stringify(log.lines)).not.toContain("secret");
  });
});

describe("threadline worker start-up", () => {
  let model: FakeOpenAIServer;
  let dir: string;
  let child: CliChild | undefined;
  const redis = connect();
  const prefix = uniquePrefix("agent-setup");

  beforeAll(async () => {
    await requireRedis(redis);
    model = await FakeOpenAIServer.start();
    dir = await mkdtemp(join(tmpdir(), "threadline-agent-setup-"));
  });
  afterAll(async () => {
    child?.kill();
    await child?.exited;
    await deletePrefix(redis, prefix);
    redis.disconnect();
    await model.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("names the model, the endpoint and the timeouts in its log", async () => {
    child = CliChild.spawn("worker", dir, {
      ...redisEnv(),
      THREADLINE_PREFIX: prefix,
      OPENAI_BASE_URL: model.baseURL,
      OPENAI_API_KEY: "sk-test",
      OPENAI_MODEL: "fake-model",
      OPENAI_HEADER_TIMEOUT_MS: "2500",
      OPENAI_IDLE_TIMEOUT_MS: "90000",
      OPS_PORT: "0",
      LOG_LEVEL: "info",
    });
    const line = JSON.parse(await child.waitForLine("header timeout")) as Record<string, unknown>;
    expect(line).toMatchObject({
      msg: `model fake-model at ${model.baseURL}; header timeout 2.5 s, idle timeout 90 s`,
      model: "fake-model",
      endpoint: model.baseURL,
      headerTimeoutMs: 2500,
      idleTimeoutMs: 90000,
    });
    await child.waitForLine("worker started");
  });
});
