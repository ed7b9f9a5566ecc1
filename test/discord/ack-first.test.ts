import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { textReply } from "../fakes/openai-server.js";
import { DiscordE2E } from "./e2e-harness.js";

let e2e: DiscordE2E;
beforeAll(async () => {
  e2e = await DiscordE2E.start();
}, 120_000);
afterAll(async () => {
  await e2e?.close();
});

describe("a Discord mention is acknowledged first", () => {
  it("👀 reaches Discord while the mention's thread is still being started", async () => {
    const tag = e2e.tag(textReply("Started."));
    const channel = e2e.channel();
    // Discord is slow to start the thread: the 👀 must not wait for it (before, it came after it).
    const starting = e2e.discord.holdNext("POST", /^\/channels\/\d+\/messages\/\d+\/threads$/);
    try {
      const mention = e2e.mention(channel, tag, "start something");
      await starting.arrived;
      await e2e.waitForReactions(mention.id, ["👀"]);
      expect(e2e.discord.hasChannel(mention.id)).toBe(false);
      starting.release();
      await e2e.waitForText(mention.id, "Started.");
    } finally {
      starting.release();
    }
  }, 60_000);
});
