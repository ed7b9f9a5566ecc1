import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { textReply } from "../fakes/openai-server.js";
import { BOB, CAROL, SlackE2E, userTexts } from "./e2e-harness.js";

// An internal (or Marketplace) app: conversations.replies at Tier 3, pages of up to 1,000 in the fake.
let e2e: SlackE2E;
beforeAll(async () => {
  e2e = await SlackE2E.start({ slack: { historyTier: "internal" }, env: { SLACK_HISTORY_TIER: "internal" } });
}, 60_000);
afterAll(async () => {
  await e2e?.close();
});

describe("Slack thread history, Tier 3", () => {
  it("pages an unseen long thread with the cursor and keeps the most recent messages", async () => {
    const store = e2e.slack.store;
    const root = store.add({ channel: e2e.channel, ts: store.nextTs(), user: BOB, text: "Long thread" });
    for (let i = 1; i <= 250; i++) {
      store.add({
        channel: e2e.channel,
        ts: store.nextTs(),
        user: CAROL,
        text: `note ${i}`,
        threadTs: root.ts,
      });
    }
    const tag = e2e.tag(textReply("Read them all."));
    e2e.mention(tag, "what is the latest note?", { threadTs: root.ts });
    await e2e.waitForRunsEnded(root);
    const calls = e2e.slack.callsOf("conversations.replies");
    expect(calls).toHaveLength(2);
    expect(calls[0]?.args.cursor).toBeUndefined();
    expect(calls[1]?.args.cursor).toEqual(expect.any(String));
    expect(store.historyPages.map((page) => page.returned)).toEqual([200, 52]);
    const text = userTexts(e2e.requests(tag)[0]).join("\n");
    // (The second page ends with the mention itself.) The 30 most recent earlier messages, all from
    // the second page, oldest first.
    expect(text).toContain("Carol: note 250");
    expect(text).toContain("Carol: note 221");
    expect(text).not.toContain("note 220\n");
    expect(text.indexOf("note 221")).toBeLessThan(text.indexOf("note 250"));
  }, 60_000);
});
