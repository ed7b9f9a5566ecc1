import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_SUGGESTED_PROMPTS, validateConfig } from "../../src/config/index.js";
import { ALICE, SlackE2E } from "./e2e-harness.js";

const DM = "D0ALICE";

/**
 * Suggested prompts in the bot's DM (https://docs.slack.dev/reference/methods/assistant.threads.setSuggestedPrompts),
 * with the real gateway and worker processes: an agent app (`agent_view`) learns of an opened DM from
 * `app_home_opened` and sets them without `thread_ts` (with one, Slack drops the call silently); a legacy
 * assistant app sets them for the thread of `assistant_thread_started`.
 */
describe("suggested prompts (agent app, prompts from the config module)", () => {
  let e2e: SlackE2E;
  beforeAll(async () => {
    e2e = await SlackE2E.start({ env: { THREADLINE_CONFIG: "test/fakes/slack-prompts.config.mjs" } });
  }, 60_000);
  afterAll(async () => {
    await e2e?.close();
  });

  it("offers the configured prompts when Alice opens the DM, once however often she flicks back", async () => {
    await e2e.slack.openDm(ALICE, DM).ack;
    const offered = await e2e.slack.store.waitFor(
      "suggested prompts",
      () => e2e.slack.store.suggestedPrompts[0],
    );
    expect(offered).toEqual({
      channel: DM,
      title: "Start here",
      prompts: [
        { title: "Deploy status", message: "What is deployed where right now?" },
        { title: "Open incidents", message: "List the open incidents and who owns them." },
        { title: "On call", message: "Who is on call this week?" },
      ],
    });
    await e2e.slack.openDm(ALICE, DM).ack;
    // A later DM of someone else is offered too: the second open of Alice's was quiet, not lost.
    await e2e.slack.openDm("U0BOB", "D0BOB").ack;
    await e2e.slack.store.waitFor("Bob's prompts", () =>
      e2e.slack.store.suggestedPrompts.find((offer) => offer.channel === "D0BOB"),
    );
    expect(e2e.slack.store.suggestedPrompts.filter((offer) => offer.channel === DM)).toHaveLength(1);
    expect(
      e2e.slack.callsOf("assistant.threads.setSuggestedPrompts").every((call) => !("thread_ts" in call.args)),
    ).toBe(true);
  });
});

describe("suggested prompts (legacy assistant app, default prompts)", () => {
  let e2e: SlackE2E;
  beforeAll(async () => {
    e2e = await SlackE2E.start({ slack: { agentView: false } });
  }, 60_000);
  afterAll(async () => {
    await e2e?.close();
  });

  it("sets the default prompts for the new assistant thread", async () => {
    const started = e2e.slack.openDm(ALICE, DM);
    await started.ack;
    const offered = await e2e.slack.store.waitFor(
      "suggested prompts",
      () => e2e.slack.store.suggestedPrompts[0],
    );
    const thread = (started.payload.event as { assistant_thread: { thread_ts: string } }).assistant_thread;
    expect(offered).toEqual({
      channel: DM,
      threadTs: thread.thread_ts,
      title: "Try asking",
      prompts: DEFAULT_SUGGESTED_PROMPTS,
    });
  });
});

describe("the config module's slack.suggestedPrompts", () => {
  it("takes at most four prompts, each with a title and a message", () => {
    const prompt = { title: "Hi", message: "Say hi" };
    expect(
      validateConfig("c.mjs", { slack: { suggestedPrompts: [prompt, prompt, prompt, prompt] } }).problems,
    ).toEqual([]);
    expect(
      validateConfig("c.mjs", {
        slack: { suggestedPrompts: [prompt, prompt, prompt, prompt, prompt] },
      }).problems.join(),
    ).toContain("at most 4");
    expect(validateConfig("c.mjs", { slack: { suggestedPrompts: [{ title: "Hi" }] } }).problems).not.toEqual(
      [],
    );
  });
});
