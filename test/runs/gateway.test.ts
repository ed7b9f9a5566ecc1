import type { Redis } from "ioredis";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { IncomingMessage, ThreadRef } from "../../src/chat/index.js";
import { createGateway, createRunQueue, Intake, type RunQueue, runsConfig } from "../../src/runs/index.js";
import { MemoryOutbound } from "../fakes/memory-outbound.js";
import { connect, deletePrefix, requireRedis, uniquePrefix } from "../support/redis.js";

const thread: ThreadRef = { platform: "slack", workspace: "T1", channel: "C1", thread: "200.1" };
const alice = { id: "U1", name: "Alice" };
let seq = 0;
function message(text: string, mentionsBot: boolean): IncomingMessage {
  seq++;
  return { id: `g${seq}`, thread, author: alice, text, attachments: [], mentionsBot, sentAt: Date.now() };
}

let redis: Redis;
let bull: Redis;
let prefix: string;
let queue: RunQueue;
let chat: MemoryOutbound;
let gateway: ReturnType<typeof createGateway>;

beforeAll(async () => {
  redis = connect();
  bull = connect({ blocking: true });
  await requireRedis(redis);
});
afterAll(() => {
  redis.disconnect();
  bull.disconnect();
});
beforeEach(() => {
  prefix = uniquePrefix("gateway");
  queue = createRunQueue(bull, prefix);
  const config = runsConfig({ prefix });
  chat = new MemoryOutbound();
  gateway = createGateway({ intake: new Intake(redis, queue, config), outbound: chat, config });
});
afterEach(async () => {
  await queue.close();
  await deletePrefix(redis, prefix);
});

const reactions = (messageId: string) =>
  chat.ops.filter((op) => op.messageId === messageId).map((op) => `${op.op} ${op.emoji}`);

describe("the gateway's acknowledgements (no worker: the run stays active)", () => {
  it("a mention that starts a run gets 👀 and keeps it", async () => {
    const mention = message("hello", true);
    await gateway.message(mention);
    expect(reactions(mention.id)).toEqual(["react eyes"]);
  });

  it("a mention while the run is active shows it is queued (🧭) before taking 👀 back", async () => {
    await gateway.message(message("hello", true));
    const again = message("also look at this", true);
    await gateway.message(again);
    // 🧭 must not wait behind the removal (Slack allows 20 removals a minute, 50 additions).
    expect(reactions(again.id)).toEqual(["react eyes", "react compass", "unreact eyes"]);
  });

  it("a plain reply while the run is active is only marked as queued", async () => {
    await gateway.message(message("hello", true));
    const reply = message("use blue", false);
    await gateway.message(reply);
    expect(reactions(reply.id)).toEqual(["react compass"]);
  });
});
