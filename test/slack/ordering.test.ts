import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { textReply } from "../fakes/openai-server.js";
import { SlackE2E, userTexts } from "./e2e-harness.js";

let e2e: SlackE2E;
beforeAll(async () => {
  e2e = await SlackE2E.start();
}, 60_000);
afterAll(async () => {
  await e2e?.close();
});

describe("Slack event order per thread", () => {
  it("a reply written while a mention waits for its history lookup reaches the model after the mention", async () => {
    const tag = e2e.tag(textReply("Did step one."), textReply("Did step two."));
    // A thread the gateway never saw (written before the bot joined): a mention in it asks Slack for the
    // thread first (conversations.replies). Make that slow.
    const root = e2e.slack.store.add({
      channel: e2e.channel,
      ts: e2e.slack.store.nextTs(),
      user: "U0BOB",
      text: "an old thread",
    });
    const lookup = e2e.slack.holdNext("conversations.replies");
    e2e.mention(tag, "step one", { threadTs: root.ts });
    await lookup.arrived;
    e2e.reply(root, "step two");
    // Give an overtaking reply every chance to reach the model before the lookup answers.
    await Promise.race([
      e2e.until("a model request while the lookup is held", async () => e2e.requests(tag).length > 1),
      new Promise((resolve) => setTimeout(resolve, 1500)),
    ]).catch(() => undefined);
    lookup.release();
    const sawStepTwo = () =>
      e2e.requests(tag).some((request) => userTexts(request).some((t) => t.includes("step two")));
    await e2e.until("step two reaching the model", async () => sawStepTwo(), 20_000);
    await e2e.waitForRunsEnded(root);
    // Every request the model got has step one before step two (queued messages may share a request).
    for (const request of e2e.requests(tag)) {
      const texts = userTexts(request);
      const one = texts.findIndex((text) => text.includes("step one"));
      const two = texts.findIndex((text) => text.includes("step two"));
      expect(one, JSON.stringify(texts)).toBeGreaterThanOrEqual(0);
      if (two >= 0) expect(two, JSON.stringify(texts)).toBeGreaterThan(one);
    }
  }, 60_000);
});
