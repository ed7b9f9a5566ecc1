import { afterAll, beforeAll, expect } from "vitest";
import type { PlaygroundMessage, PlaygroundThread } from "../../src/playground/index.js";
import {
  describeInterruptsAndApprovalWaits,
  type Mark,
  type Person,
} from "../support/interrupt-scenarios.js";
import { PlaygroundE2E } from "../support/playground-e2e.js";
import { EventStream } from "./helpers.js";

/**
 * Issue #18 in the playground (`threadline start`, gateway and worker in one process, as the playground
 * runs): the shared scenarios (test/support/interrupt-scenarios.ts) through the playground's HTTP API —
 * marks are the bot's reactions, cards are approval messages, the private notice is a live event only
 * its user's browser gets.
 */

const USERS: Record<Person, { id: string; name: string }> = {
  alice: { id: "u-alice", name: "Alice" },
  bob: { id: "u-bob", name: "Bob" },
};
const MARKS: Record<Mark, string> = {
  steer: "compass",
  zap: "zap",
  followUp: "hourglass_flowing_sand",
  done: "white_check_mark",
};

let e2e: PlaygroundE2E;
/** Each person's own event stream, as their browser opens it (private notices reach only that one). */
const personal = new Map<Person, EventStream>();
beforeAll(async () => {
  e2e = await PlaygroundE2E.start("pg-interrupt", {
    THREADLINE_CONFIG: "test/fakes/approval-reminder.config.mjs",
    THREADLINE_APPROVAL_TIMEOUT_MS: "120000",
  });
  for (const person of ["alice", "bob"] as const) {
    personal.set(person, await EventStream.open(`${e2e.url}/api/events?user=${USERS[person].id}`));
  }
}, 90_000);
afterAll(async () => {
  for (const stream of personal.values()) stream.close();
  await e2e?.close();
}, 30_000);

/** A message of a playground thread (a reply, a card, a reminder) as the page got it. */
interface Shown {
  thread: string;
  message: PlaygroundMessage;
}

const messages = async (thread: string) => (await e2e.snapshot(thread)).messages;
const botText = async (thread: string) =>
  (await messages(thread))
    .filter((message) => message.kind === "bot")
    .map((message) => message.text)
    .join("\n");
/** The marks the bot wears on a message now. */
const marks = async ({ thread, message }: Shown) =>
  ((await messages(thread)).find((candidate) => candidate.id === message.id)?.reactions ?? [])
    .filter((reaction) => reaction.users.some((user) => user.name === "Threadline"))
    .map((reaction) => reaction.emoji);
/** The marks the bot added to a message, in order, as the live events told every browser. */
const marksAdded = ({ thread, message }: Shown) =>
  e2e.events.received.flatMap((event) =>
    event.type === "reaction" &&
    event.thread === thread &&
    event.id === message.id &&
    event.added &&
    event.user.name === "Threadline"
      ? [event.emoji]
      : [],
  );
const cards = async (thread: string): Promise<Shown[]> =>
  (await messages(thread)).flatMap((message) => (message.card ? [{ thread, message }] : []));
/** The card as the page shows it now. */
const cardNow = async ({ thread, message }: Shown) =>
  (await messages(thread)).find((candidate) => candidate.id === message.id)?.card;
const notices = (person: Person, thread: string) =>
  personal
    .get(person)!
    .received.flatMap((event) =>
      event.type === "notice" && event.thread === thread && event.userId === USERS[person].id
        ? [event.text]
        : [],
    );
const until = (what: string, check: () => Promise<boolean> | boolean) => e2e.until(what, check, 30_000);

describeInterruptsAndApprovalWaits<string, Shown>("the playground", {
  harness: () => e2e,
  start: async (tag, text) => {
    const { body } = await e2e.post("/api/threads", {
      user: USERS.alice,
      text: `@Threadline [${tag}] ${text}`,
    });
    return (body as { thread: PlaygroundThread }).thread.id;
  },
  waitForText: (thread, text) => until(`"${text}"`, async () => (await botText(thread)).includes(text)),
  waitForRunsEnded: async (thread) => {
    await e2e.finished(thread);
    await until("the thread to be idle", async () => (await e2e.redis.exists(e2e.keys(thread).lease)) === 0);
  },
  reply: async (thread, text, person = "alice") => {
    const { body } = await e2e.post(`/api/threads/${thread}/messages`, { user: USERS[person], text });
    return { thread, message: (body as { message: PlaygroundMessage }).message };
  },
  react: (person, { thread, message }, mark) =>
    e2e.post(`/api/threads/${thread}/messages/${message.id}/reactions`, {
      user: USERS[person],
      emoji: MARKS[mark],
      added: true,
    }),
  waitForMark: (shown, mark) => until(MARKS[mark], async () => (await marks(shown)).includes(MARKS[mark])),
  async expectMarks(shown, expected) {
    await until("✅ only", async () => (await marks(shown)).join() === MARKS.done);
    expect(marksAdded(shown)).toEqual(expected.map((mark) => MARKS[mark]));
  },
  shown: (thread) => botText(thread),
  disposition: (thread, { message }) => e2e.redis.hget(e2e.keys(thread).disposition, message.id),
  lease: (thread) => e2e.keys(thread).lease,

  waitForCards: async (thread, count) => {
    await until(`${count} card(s)`, async () => (await cards(thread)).length >= count);
    return cards(thread);
  },
  cards,
  cardText: ({ message }) => message.card?.argumentsText ?? "",
  click: (person, { thread, message }, decision) =>
    e2e.post(`/api/threads/${thread}/approvals/${message.card!.approvalId}`, {
      user: USERS[person],
      decision,
    }),
  waitForDecision: (card, outcome) =>
    until(`the card ${outcome}`, async () => (await cardNow(card))?.state.kind === outcome),
  expectPending: async (card) => expect((await cardNow(card))?.state.kind).toBe("pending"),
  waitForNotice: async (thread, person) => {
    await until(`the notice to ${person}`, () => notices(person, thread).length > 0);
    return notices(person, thread)[0]!;
  },
  expectNoNotice: (person) =>
    expect(personal.get(person)!.received.filter((event) => event.type === "notice")).toEqual([]),
  // The playground has no mention markup: a mention is the person's name (it used to be raw `<@u-alice>`).
  mentionOf: (person) => `@${USERS[person].name}`,
  reminders: async (thread) =>
    (await messages(thread))
      .filter(
        (message) =>
          message.kind === "bot" && !message.card && message.text.includes(`@${USERS.alice.name} `),
      )
      .map((message) => ({ thread, message })),
  textOf: ({ message }) => message.text,
  // Nothing more to check: a playground message notifies no one.
  expectReminder: () => {},
});
