import { afterAll, beforeAll, expect } from "vitest";
import { type ThreadRef, threadId } from "../../src/chat/index.js";
import { threadKeys } from "../../src/runs/index.js";
import type { FakeMessage, FakeUser } from "../fakes/discord-server.js";
import {
  describeInterruptsAndApprovalWaits,
  type Mark,
  type Person,
} from "../support/interrupt-scenarios.js";
import { DiscordE2E } from "./e2e-harness.js";

/**
 * Issue #18 on Discord, with `threadline gateway` and `threadline worker` as separate processes: the shared
 * scenarios (test/support/interrupt-scenarios.ts) on the fake Discord — marks are Unicode reactions, cards
 * are embeds with buttons, the private notice is a DM.
 */

let e2e: DiscordE2E;
beforeAll(async () => {
  e2e = await DiscordE2E.start({
    env: {
      THREADLINE_CONFIG: "test/fakes/approval-reminder.config.mjs",
      THREADLINE_APPROVAL_TIMEOUT_MS: "120000",
    },
  });
}, 120_000);
afterAll(async () => {
  await e2e?.close();
});

const MARKS: Record<Mark, string> = { steer: "🧭", zap: "⚡", followUp: "⏳", done: "✅" };
const user = (person: Person): FakeUser => (person === "alice" ? e2e.alice : e2e.bob);

/** A conversation: Alice's mention in a fresh channel; its thread has the mention's id. */
interface Conversation {
  thread: string;
  ref: ThreadRef;
}

/** The emoji the bot added to a message, in the order it added them (its successful PUTs). */
function marksAdded(messageId: string): string[] {
  return e2e.discord
    .requestsTo("PUT", new RegExp(`/messages/${messageId}/reactions/`))
    .filter((request) => request.status < 300)
    .map((request) => decodeURIComponent(request.path.split("/reactions/")[1]!.split("/")[0]!))
    .map((emoji) => emoji.replaceAll("\uFE0F", ""));
}

/**
 * The marks a message showed, in the order of first appearance, ✅ last. The gateway's ⚡ and the worker's ✅
 * come from different processes over Discord's per-route reaction limit, so a retried ⚡ can land after ✅
 * (and is then taken back by the worker's retried removal): which one a 429 delays is not ours to order.
 */
function shownMarks(messageId: string): string[] {
  const added = [...new Set(marksAdded(messageId))];
  return [...added.filter((emoji) => emoji !== MARKS.done), ...added.filter((emoji) => emoji === MARKS.done)];
}

function cards(threadChannelId: string): FakeMessage[] {
  return e2e.discord.botMessages(threadChannelId).filter((message) => message.embeds.length > 0);
}

function buttonId(card: FakeMessage, decision: string): string {
  const ids = (card.components as { components: { custom_id: string }[] }[]).flatMap((row) =>
    row.components.map((button) => button.custom_id),
  );
  const id = ids.find((candidate) => candidate.startsWith(`tl:${decision}:`));
  if (!id) throw new Error(`no ${decision} button on the card`);
  return id;
}

/** The decision field of a decided card ("" while it is pending). */
function decision(card: FakeMessage): string {
  const fields = (card.embeds[0] as { fields?: { name: string; value: string }[] } | undefined)?.fields ?? [];
  return fields.find((field) => field.name === "Decision")?.value ?? "";
}

/** The bot's messages in `person`'s DM channel (none while there is no such channel). */
function directMessages(person: Person): string[] {
  const dm = [...e2e.discord.state.channels.values()].find(
    (channel) => channel.recipientId === user(person).id,
  );
  return dm ? e2e.discord.botMessages(dm.id).map((message) => message.content) : [];
}

describeInterruptsAndApprovalWaits<Conversation, FakeMessage>("Discord", {
  harness: () => e2e,
  start: (tag, text) => {
    const channel = e2e.channel();
    const mention = e2e.mention(channel, tag, text);
    return { thread: mention.id, ref: e2e.threadRef(mention, channel) };
  },
  waitForText: ({ thread }, text) => e2e.waitForText(thread, text),
  waitForRunsEnded: async ({ thread, ref }, answer) => {
    await e2e.waitForText(thread, answer);
    await e2e.waitForIdle(ref);
  },
  reply: ({ thread }, text, person = "alice") => e2e.discord.say(thread, user(person), text),
  react: async (person, message, mark) => e2e.discord.react(user(person), message.id, MARKS[mark]),
  // The bot's marks are exactly `mark` (each replaces the one before).
  waitForMark: (message, mark) => e2e.waitForReactions(message.id, [MARKS[mark]]),
  async expectMarks(message, marks) {
    // Once the message showed ⚡ and ✅ it wears only ✅ (the gateway takes back a late ⚡).
    await e2e.until(
      "⚡ and ✅ shown",
      () => marksAdded(message.id).includes(MARKS.zap) && marksAdded(message.id).includes(MARKS.done),
    );
    await e2e.waitForReactions(message.id, [MARKS.done]);
    expect(shownMarks(message.id)).toEqual(marks.map((mark) => MARKS[mark]));
  },
  shown: ({ thread }) =>
    e2e.discord
      .botMessages(thread)
      .map((message) => message.content)
      .join("\n"),
  disposition: ({ ref }, reply) =>
    e2e.redis.hget(threadKeys(e2e.prefix, threadId(ref)).disposition, reply.id),
  lease: ({ ref }) => threadKeys(e2e.prefix, threadId(ref)).lease,

  waitForCards: async ({ thread }, count) => {
    await e2e.discord.waitFor(() => cards(thread).length >= count);
    return cards(thread);
  },
  cards: ({ thread }) => cards(thread),
  cardText: (card) => JSON.stringify(card.embeds),
  click: (person, card, choice) => {
    e2e.discord.click(user(person), card.id, buttonId(card, choice));
  },
  waitForDecision: (card, outcome) => {
    const text = `${outcome === "approved" ? "Approved" : "Denied"} by Alice`;
    return e2e.until(`the card to say "${text}"`, () => decision(card).includes(text));
  },
  expectPending: (card) => {
    expect(decision(card)).toBe("");
    expect(card.components).not.toEqual([]);
  },
  waitForNotice: async (_, person) => {
    await e2e.until(`the notice to ${person}`, () => directMessages(person).length > 0);
    return directMessages(person)[0]!;
  },
  expectNoNotice: (person) => expect(directMessages(person)).toEqual([]),
  mentionOf: (person) => `<@${user(person).id}>`,
  reminders: ({ thread }) =>
    e2e.discord
      .botMessages(thread)
      .filter((message) => message.embeds.length === 0 && message.content.includes(`<@${e2e.alice.id}>`)),
  textOf: (message) => message.content,
  // A mention the message's allowed_mentions suppress shows the name but sends no notification.
  expectReminder: (_, reminder) => expect(reminder.pinged).toEqual([e2e.alice.id]),
});
