import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { textReply } from "../fakes/openai-server.js";
import { CliProcess } from "../support/process.js";
import { redisEnv } from "../support/redis.js";
import { ALICE, BOB, CAROL, SlackE2E, userTexts } from "./e2e-harness.js";

// The fake Slack runs the default, strict tier of a distributed non-Marketplace app: conversations.replies
// answers 1 call a minute (HTTP 429 beyond) and at most 15 messages a page.
let e2e: SlackE2E;
beforeAll(async () => {
  e2e = await SlackE2E.start();
}, 60_000);
afterAll(async () => {
  await e2e?.close();
});

/** A thread the gateway never received (written before the bot was there): only Slack knows it. */
function unseenThread(text: string, replies: string[]) {
  const root = e2e.slack.store.add({ channel: e2e.channel, ts: e2e.slack.store.nextTs(), user: BOB, text });
  for (const reply of replies) {
    e2e.slack.store.add({
      channel: e2e.channel,
      ts: e2e.slack.store.nextTs(),
      user: CAROL,
      text: reply,
      threadTs: root.ts,
    });
  }
  return root;
}

const repliesCalls = () => e2e.slack.callsOf("conversations.replies");

describe("Slack thread history", () => {
  it("a mention in a thread the gateway saw all along brings its history without asking Slack", async () => {
    const root = e2e.slack.post({ user: BOB, channel: e2e.channel, text: "Plan: deploy the API on Friday." });
    e2e.reply(root, "I'd rather deploy on Monday.", CAROL);
    e2e.reply(root, "Typo fix: the *web* API.", BOB);
    const tag = e2e.tag(textReply("Monday it is."));
    const mention = e2e.mention(tag, "which day should we pick?", { threadTs: root.ts });
    await e2e.waitForRunsEnded(root);
    const [first] = e2e.requests(tag);
    const text = userTexts(first).join("\n");
    expect(text).toContain("[Earlier messages in this thread]");
    expect(text).toContain("Bob: Plan: deploy the API on Friday.");
    expect(text).toContain("Carol: I'd rather deploy on Monday.");
    expect(text).toContain("Bob: Typo fix: the *web* API.");
    expect(text.indexOf("Friday")).toBeLessThan(text.indexOf("Monday"));
    expect(text.indexOf("[End of earlier messages]")).toBeLessThan(text.indexOf("which day"));
    expect(e2e.reactions(mention)).toContain("eyes");
    expect(repliesCalls()).toHaveLength(0);
  }, 60_000);

  it("reads an unseen thread from Slack once, within the tier's page size, then answers from what it kept", async () => {
    const root = unseenThread(
      "Old thread root",
      Array.from({ length: 20 }, (_, i) => `old reply ${i + 1}`),
    );
    const tag = e2e.tag(textReply("Read it."), textReply("Still here."));
    e2e.mention(tag, "summarize this thread", { threadTs: root.ts });
    await e2e.waitForRunsEnded(root);
    expect(repliesCalls()).toHaveLength(1);
    // At most 15 messages a page for this tier: the root and the first 14 replies.
    expect(repliesCalls()[0]?.args.limit).toBe("15");
    expect(e2e.slack.store.historyPages.at(-1)).toMatchObject({ limit: 15, returned: 15 });
    const text = userTexts(e2e.requests(tag)[0]).join("\n");
    expect(text).toContain("Bob: Old thread root");
    expect(text).toContain("Carol: old reply 14");
    expect(text).not.toContain("old reply 15");
    expect(e2e.slack.rateLimited).toBe(0);
  }, 60_000);

  it("with the tier used up, a mention in another unseen thread is answered at once, with what was seen, in order", async () => {
    // The minute's single call went to the test above (or goes to this one's first thread).
    const spent = unseenThread("Spend the budget", ["a reply nobody saw"]);
    const spender = e2e.tag(textReply("Ok."));
    e2e.mention(spender, "look at this", { threadTs: spent.ts });
    await e2e.waitForRunsEnded(spent);
    const callsBefore = repliesCalls().length;
    expect(callsBefore).toBeGreaterThanOrEqual(1);

    const root = unseenThread("Incident 42: the queue is stuck", ["restarted the consumer"]);
    e2e.reply(root, "still stuck after the restart", ALICE);
    const tag = e2e.tag(textReply("Looking into it."), textReply("And the logs too."));
    const mention = e2e.mention(tag, "what now?", { threadTs: root.ts });
    const followUp = e2e.reply(root, "logs are in #ops", ALICE);
    // Acknowledged and run well before Slack's minute is over (the wait gives up after 20 s).
    await e2e.waitForReaction(mention, "eyes", 20_000);
    await e2e.until(
      "the follow-up reaching the model",
      async () =>
        e2e.requests(tag).some((request) => userTexts(request).some((t) => t.includes("logs are in #ops"))),
      20_000,
    );
    await e2e.waitForRunsEnded(root, 1, 20_000);
    // No call was made that the tier would refuse: no conversations.replies, no 429.
    expect(repliesCalls()).toHaveLength(callsBefore);
    expect(e2e.slack.rateLimited).toBe(0);
    const first = userTexts(e2e.requests(tag)[0]).join("\n");
    // What the gateway saw of the thread is the history; what only Slack has is missing.
    expect(first).toContain("Alice: still stuck after the restart");
    expect(first).not.toContain("restarted the consumer");
    // In order: the mention before the follow-up written after it, in every request.
    for (const request of e2e.requests(tag)) {
      const texts = userTexts(request);
      const asked = texts.findIndex((t) => t.includes("what now?"));
      const logs = texts.findIndex((t) => t.includes("logs are in #ops"));
      expect(asked, JSON.stringify(texts)).toBeGreaterThanOrEqual(0);
      if (logs >= 0) expect(logs, JSON.stringify(texts)).toBeGreaterThan(asked);
    }
    expect(followUp.ts > mention.ts).toBe(true);
  }, 60_000);
  // Last: it replaces the harness's gateway with another process.
  it("a second gateway instance builds the history from what the first one received", async () => {
    const root = e2e.slack.post({ user: BOB, channel: e2e.channel, text: "Release notes draft is ready." });
    e2e.reply(root, "Added the migration section.", CAROL);
    await e2e.until(
      "the first gateway recorded the thread",
      async () =>
        (await e2e.redis.llen(
          `${e2e.prefix}:{slack:${e2e.slack.config.teamId}:${e2e.channel}:${root.ts}}:slack-seen`,
        )) >= 2,
    );
    // Another gateway process takes over the Socket Mode deliveries; it never saw the thread.
    const second = await CliProcess.start(
      "gateway",
      {
        SLACK_BOT_TOKEN: e2e.slack.config.botToken,
        SLACK_APP_TOKEN: e2e.slack.config.appToken,
        SLACK_SIGNING_SECRET: "",
        SLACK_API_URL: e2e.slack.apiUrl,
        DISCORD_TOKEN: "",
        ...redisEnv(),
        THREADLINE_PREFIX: e2e.prefix,
        OPENAI_BASE_URL: e2e.openai.baseURL,
        OPENAI_API_KEY: "sk-test",
        OPENAI_MODEL: "fake-model",
        THREADLINE_TOOLS_MODULE: "test/fakes/slack-tools.ts",
        LOG_LEVEL: "info",
      },
      "gateway receiving events",
    );
    try {
      await e2e.gateway.stop();
      const calls = repliesCalls().length;
      const tag = e2e.tag(textReply("Looks good."));
      e2e.mention(tag, "can you review it?", { threadTs: root.ts });
      await e2e.waitForRunsEnded(root);
      const text = userTexts(e2e.requests(tag)[0]).join("\n");
      expect(text).toContain("Bob: Release notes draft is ready.");
      expect(text).toContain("Carol: Added the migration section.");
      expect(repliesCalls()).toHaveLength(calls);
    } finally {
      await second.stop();
    }
  }, 60_000);
});
