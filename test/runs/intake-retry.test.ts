import { Redis } from "ioredis";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { IncomingMessage, ThreadRef } from "../../src/chat/index.js";
import {
  createGateway,
  createRunQueue,
  Intake,
  NOT_STORED_NOTICE,
  type RunLogger,
  type RunQueue,
  runsConfig,
} from "../../src/runs/index.js";
import { MemoryOutbound } from "../fakes/memory-outbound.js";
import { PrivateRedis } from "../support/private-redis.js";
import { uniquePrefix } from "../support/redis.js";

const thread: ThreadRef = { platform: "slack", workspace: "T1", channel: "C1", thread: "300.1" };
const alice = { id: "U1", name: "Alice" };
const mention: IncomingMessage = {
  id: "300.1",
  thread,
  author: alice,
  text: "hello",
  attachments: [],
  mentionsBot: true,
  sentAt: Date.now(),
};

let redis: PrivateRedis;
let client: Redis;
let bull: Redis;
let queue: RunQueue;
let chat: MemoryOutbound;
let lines: { level: string; fields: Record<string, unknown>; message: string }[];

beforeEach(async () => {
  redis = await PrivateRedis.start();
  // Fails a command at the first failed reconnect: the gateway's own retries are what is tested here.
  client = new Redis(redis.url, { maxRetriesPerRequest: 0, retryStrategy: () => 50 });
  client.on("error", () => {});
  bull = new Redis(redis.url, { maxRetriesPerRequest: null, retryStrategy: () => 50 });
  bull.on("error", () => {});
  queue = createRunQueue(bull, uniquePrefix("retry"));
  chat = new MemoryOutbound();
  lines = [];
});
afterEach(async () => {
  client.disconnect();
  bull.disconnect();
  await redis.down();
});

function gateway(giveUpAfterMs: number) {
  const record = (level: string) => (fields: Record<string, unknown>, message: string) =>
    void lines.push({ level, fields, message });
  const log: RunLogger = { info: record("info"), warn: record("warn"), error: record("error") };
  const config = runsConfig({ prefix: uniquePrefix("retry") });
  return createGateway({
    intake: new Intake(client, queue, config),
    outbound: chat,
    config,
    log,
    intakeRetry: { giveUpAfterMs, firstDelayMs: 50, maxDelayMs: 200 },
  });
}

const reactions = () =>
  chat.ops.filter((op) => op.messageId === mention.id).map((op) => `${op.op} ${op.emoji}`);

describe("the gateway stores a message while Redis is away", () => {
  it("retries until Redis is back, then starts the run once (no ⚠️)", async () => {
    const inbound = gateway(30_000);
    await redis.down();
    const handled = inbound.message(mention);
    await new Promise<void>((resolve) => {
      const poll = setInterval(() => {
        if (lines.some((line) => line.message.includes("retrying"))) {
          clearInterval(poll);
          resolve();
        }
      }, 20);
    });
    await redis.up();
    await handled;
    expect(reactions()).toEqual(["react eyes"]);
    expect(await queue.getJobCounts("waiting")).toMatchObject({ waiting: 1 });
    await inbound.message(mention);
    expect(await queue.getJobCounts("waiting")).toMatchObject({ waiting: 1 });
    expect(lines.find((line) => line.message.includes("retrying"))?.fields.messageId).toBe(mention.id);
  });

  it("gives up visibly: ⚠️ instead of 👀, a private notice, an error line with the message id; final", async () => {
    const inbound = gateway(300);
    await redis.down();
    await inbound.message(mention);
    expect(reactions()).toEqual(["react eyes", "react warning", "unreact eyes"]);
    expect(chat.ops.filter((op) => op.op === "notify").map((op) => [op.userId, op.text])).toEqual([
      [alice.id, NOT_STORED_NOTICE],
    ]);
    const gaveUp = lines.filter((line) => line.level === "error");
    expect(gaveUp.map((line) => [line.message, line.fields.messageId])).toEqual([
      ["message not stored; gave up", mention.id],
    ]);
    // A redelivery of the same message after the person was told to resend it does not start a run.
    await redis.up();
    await inbound.message(mention);
    expect(await queue.getJobCounts("waiting")).toMatchObject({ waiting: 0 });
  });
});
