import { afterEach, describe, expect, it } from "vitest";
import { textReply } from "../fakes/openai-server.js";
import type { Delivery } from "../fakes/slack-events.js";
import type { FakeMessage } from "../fakes/slack-server.js";
import { PrivateRedis } from "../support/private-redis.js";
import { SlackE2E } from "./e2e-harness.js";

let e2e: SlackE2E | undefined;
let redis: PrivateRedis | undefined;
afterEach(async () => {
  await e2e?.close();
  await redis?.down();
  e2e = undefined;
  redis = undefined;
}, 30_000);

/** The deliveries (message and app_mention events) of a posted message. */
function deliveriesOf(message: FakeMessage): Delivery[] {
  return e2e!.slack.delivery.all.filter(
    (delivery) => (delivery.payload.event as { ts?: string } | undefined)?.ts === message.ts,
  );
}

async function until(what: string, check: () => boolean, timeoutMs = 20_000): Promise<void> {
  await e2e!.until(what, async () => check(), timeoutMs);
}

describe("a Slack mention while Redis is down is stored once Redis is back, never lost or run twice", () => {
  it("HTTP mode: answers non-2xx until the event is stored, so Slack retries; the run starts once", async () => {
    redis = await PrivateRedis.start();
    e2e = await SlackE2E.start({ mode: "http", env: { REDIS_URL: redis.url } });
    const tag = e2e.tag(textReply("Stored and answered."));
    await redis.down();
    const mention = e2e.mention(tag, "are you there?");
    await until("a non-2xx answer to the mention", () =>
      deliveriesOf(mention).some((delivery) => delivery.responses.some((status) => status !== 200)),
    );
    expect(deliveriesOf(mention).some((delivery) => delivery.acked)).toBe(false);
    await redis.up();
    await e2e.waitForText(mention, "Stored and answered.", 30_000);
    await e2e.waitForRunsEnded(mention);
    await until("every delivery acknowledged", () => deliveriesOf(mention).every((d) => d.acked));
    expect(e2e.requests(tag)).toHaveLength(1);
    expect(e2e.botMessages(mention)).toHaveLength(1);
    const answers = deliveriesOf(mention).flatMap((delivery) => delivery.responses);
    expect(answers[0]).toBe(500);
    expect(answers.at(-1)).toBe(200);
  }, 90_000);

  it("Socket Mode: withholds the ack until the event is stored (Slack redelivers meanwhile); the run starts once", async () => {
    redis = await PrivateRedis.start();
    e2e = await SlackE2E.start({
      mode: "socket",
      slack: { ackTimeoutMs: 1000 },
      env: { REDIS_URL: redis.url },
    });
    const tag = e2e.tag(textReply("Stored and answered."));
    await redis.down();
    const mention = e2e.mention(tag, "are you there?");
    await until("a redelivery of the unacknowledged mention", () =>
      deliveriesOf(mention).some((delivery) => delivery.attempts >= 2),
    );
    expect(deliveriesOf(mention).some((delivery) => delivery.acked)).toBe(false);
    await redis.up();
    await e2e.waitForText(mention, "Stored and answered.", 30_000);
    await e2e.waitForRunsEnded(mention);
    await until("every delivery acknowledged", () => deliveriesOf(mention).every((d) => d.acked));
    expect(e2e.requests(tag)).toHaveLength(1);
    expect(e2e.botMessages(mention)).toHaveLength(1);
    expect(e2e.reactions(mention)).not.toContain("warning");
  }, 90_000);
});
