import { afterAll, beforeAll, expect } from "vitest";
import { threadId } from "../../src/chat/index.js";
import { threadKeys } from "../../src/runs/index.js";
import type { FakeMessage } from "../fakes/slack-server.js";
import {
  describeInterruptsAndApprovalWaits,
  type Mark,
  type Person,
} from "../support/interrupt-scenarios.js";
import { ALICE, BOB, SlackE2E } from "./e2e-harness.js";

/**
 * Issue #18 on Slack, with `threadline gateway` and `threadline worker` as separate processes: the shared
 * scenarios (test/support/interrupt-scenarios.ts) on the fake Slack — marks are reactions, cards are
 * Block Kit messages, the private notice is an ephemeral message.
 */

let e2e: SlackE2E;
beforeAll(async () => {
  e2e = await SlackE2E.start({
    env: {
      THREADLINE_CONFIG: "test/fakes/approval-reminder.config.mjs",
      THREADLINE_APPROVAL_TIMEOUT_MS: "120000",
    },
  });
}, 60_000);
afterAll(async () => {
  await e2e?.close();
});

const USERS: Record<Person, string> = { alice: ALICE, bob: BOB };
const MARKS: Record<Mark, string> = {
  steer: "compass",
  zap: "zap",
  followUp: "hourglass_flowing_sand",
  done: "white_check_mark",
};

/** The emoji the bot added to `message`, in the order it added them. */
function marksAdded(message: FakeMessage): string[] {
  return e2e.slack
    .callsOf("reactions.add")
    .filter((call) => call.args.timestamp === message.ts && call.outcome === "ok")
    .map((call) => String(call.args.name));
}

function cards(root: FakeMessage): FakeMessage[] {
  return e2e.botMessages(root).filter((message) => message.blocks !== undefined);
}

function hasButtons(message: FakeMessage): boolean {
  return (message.blocks ?? []).some((block) => (block as { type?: string }).type === "actions");
}

function keysOf(root: FakeMessage) {
  return threadKeys(
    e2e.prefix,
    threadId({
      platform: "slack",
      workspace: e2e.slack.config.teamId,
      channel: root.channel,
      thread: root.ts,
    }),
  );
}

describeInterruptsAndApprovalWaits<FakeMessage, FakeMessage>("Slack", {
  harness: () => e2e,
  start: (tag, text) => e2e.mention(tag, text),
  waitForText: (mention, text) => e2e.waitForText(mention, text),
  waitForRunsEnded: (mention) => e2e.waitForRunsEnded(mention),
  reply: (mention, text, person = "alice") => e2e.reply(mention, text, USERS[person]),
  react: (person, message, mark) => e2e.slack.react(USERS[person], message, MARKS[mark]).ack,
  waitForMark: (message, mark) => e2e.waitForReaction(message, MARKS[mark]),
  async expectMarks(message, marks) {
    await e2e.waitForReaction(message, MARKS.done);
    expect(e2e.reactions(message)).toEqual([MARKS.done]);
    expect(marksAdded(message)).toEqual(marks.map((mark) => MARKS[mark]));
  },
  // Without the zero-width spaces Slack's mrkdwn needs around italics.
  shown: (mention) => e2e.visibleTexts(mention).join("\n").replaceAll("\u200B", ""),
  disposition: (mention, reply) => e2e.redis.hget(keysOf(mention).disposition, reply.ts),
  lease: (mention) => keysOf(mention).lease,

  waitForCards: (mention, count) =>
    e2e.slack.store.waitFor(`${count} card(s)`, () => {
      const found = cards(mention);
      return found.length >= count ? found : undefined;
    }),
  cards,
  cardText: (card) => card.text,
  click: (person, card, decision) => {
    e2e.slack.click(USERS[person], card, `threadline:${decision}:`);
  },
  waitForDecision: (card, outcome) => {
    const text = `${outcome === "approved" ? "Approved" : "Denied"}* by Alice`;
    return e2e.slack.store.waitFor(`card shows "${text}"`, () =>
      card.text.includes(text) && !hasButtons(card) ? card : undefined,
    );
  },
  expectPending: (card) => expect(hasButtons(card)).toBe(true),
  waitForNotice: async (mention, person) =>
    (
      await e2e.slack.store.waitFor(`the notice to ${person}`, () =>
        e2e.slack.store.ephemerals.find(
          (entry) => entry.user === USERS[person] && entry.threadTs === mention.ts,
        ),
      )
    ).text,
  expectNoNotice: (person) =>
    expect(e2e.slack.store.ephemerals.filter((entry) => entry.user === USERS[person])).toEqual([]),
  mentionOf: (person) => `<@${USERS[person]}>`,
  reminders: (mention) =>
    e2e.botMessages(mention).filter((message) => message.text.includes(`<@${ALICE}>`) && !message.blocks),
  textOf: (message) => message.text,
  expectReminder: (mention, reminder) => expect(reminder.threadTs).toBe(mention.ts),
});
