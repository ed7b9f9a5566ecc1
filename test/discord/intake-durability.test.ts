import { afterEach, describe, expect, it } from "vitest";
import { textReply } from "../fakes/openai-server.js";
import { PrivateRedis } from "../support/private-redis.js";
import { DiscordE2E } from "./e2e-harness.js";

let e2e: DiscordE2E | undefined;
let redis: PrivateRedis | undefined;
afterEach(async () => {
  await e2e?.close();
  await redis?.down();
  e2e = undefined;
  redis = undefined;
}, 30_000);

describe("a Discord mention while Redis restarts", () => {
  it("is stored once Redis is back and starts exactly one run", async () => {
    redis = await PrivateRedis.start();
    e2e = await DiscordE2E.start({ env: { REDIS_URL: redis.url } });
    const tag = e2e.tag(textReply("Stored and answered."));
    const channel = e2e.channel();
    await redis.down();
    const mention = e2e.mention(channel, tag, "are you there?");
    // The outage: the gateway receives the mention while Redis is away for a few seconds.
    await new Promise((resolve) => setTimeout(resolve, 2500));
    await redis.up();
    await e2e.waitForText(mention.id, "Stored and answered.");
    expect(e2e.requests(tag)).toHaveLength(1);
    expect(
      e2e.discord.botMessages(mention.id).filter((m) => m.content.includes("Stored and answered.")),
    ).toHaveLength(1);
    expect(e2e.discord.hasReaction(mention.id, "⚠️")).toBe(false);
  }, 90_000);
});
