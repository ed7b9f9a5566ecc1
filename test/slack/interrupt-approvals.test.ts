import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { threadId } from "../../src/chat/index.js";
import { threadKeys } from "../../src/runs/index.js";
import { chunks, type FakeReply, textReply, toolCallReply } from "../fakes/openai-server.js";
import type { FakeMessage } from "../fakes/slack-server.js";
import { toolResults } from "../support/model-requests.js";
import { ALICE, BOB, SlackE2E, userTexts } from "./e2e-harness.js";

/**
 * Issue #18 on Slack, with `threadline gateway` and `threadline worker` as separate processes: ⚡ (reaction
 * and `!!` prefix) cuts a streaming answer, a text reply while a card waits gets the private notice, the
 * reminder mentions the requester once, and two cards of one batch resolve independently.
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

const CUT_TEXT = "Here is a long answer that";

/** A streamed answer that writes {@link CUT_TEXT} and then keeps the connection open until the client leaves. */
function hangingAnswer(): FakeReply {
  return {
    kind: "stream",
    chunks: [
      chunks.role(),
      chunks.text("Here is a long "),
      chunks.text("answer that"),
      chunks.finish("stop"),
    ],
    hangAfter: 3,
  };
}

/** The messages of the model request `index` of a tag's conversation. */
function messagesOf(tag: string, index: number): { role: string; content: unknown }[] {
  const body = e2e.requests(tag)[index]?.body as
    | { messages?: { role: string; content: unknown }[] }
    | undefined;
  return body?.messages ?? [];
}

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

async function decided(message: FakeMessage, text: string): Promise<FakeMessage> {
  return e2e.slack.store.waitFor(`card shows "${text}"`, () =>
    message.text.includes(text) && !hasButtons(message) ? message : undefined,
  );
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

/** What the thread shows, without the zero-width spaces Slack's mrkdwn needs around italics. */
function shownText(root: FakeMessage): string {
  return e2e.visibleTexts(root).join("\n").replaceAll("\u200B", "");
}

/** The bot's reminders in the thread of `root` (messages that mention `user`). */
function reminders(root: FakeMessage, user: string): FakeMessage[] {
  return e2e.botMessages(root).filter((message) => message.text.includes(`<@${user}>`) && !message.blocks);
}

describe("⚡ on Slack (gateway and worker processes)", () => {
  it("a ⚡ reaction on a queued reply cuts the streaming answer; the next request carries the cut text and the reply", async () => {
    const tag = e2e.tag(hangingAnswer(), textReply("A haiku it is."));
    const mention = e2e.mention(tag, "write an essay");
    await e2e.waitForText(mention, CUT_TEXT);
    const reply = e2e.reply(mention, "no, a haiku");
    await e2e.waitForReaction(reply, "compass");
    e2e.slack.react(ALICE, reply, "zap");
    await e2e.waitForRunsEnded(mention);

    const first = e2e.requests(tag)[0]!;
    expect(await first.outcome).toBe("client-disconnected");
    expect(e2e.requests(tag)).toHaveLength(2);
    const next = messagesOf(tag, 1).filter((message) => message.role !== "system");
    expect(next.map((message) => message.role)).toEqual(["user", "assistant", "user"]);
    expect(next[1]?.content).toBe(
      `${CUT_TEXT}\n\n[This answer was cut off here by a new message from Alice.]`,
    );
    expect(userTexts(e2e.requests(tag)[1]).at(-1)).toBe("Alice: no, a haiku");

    // The reply's mark went 🧭 → ⚡ → ✅.
    await e2e.waitForReaction(reply, "white_check_mark");
    expect(e2e.reactions(reply)).toEqual(["white_check_mark"]);
    expect(marksAdded(reply)).toEqual(["compass", "zap", "white_check_mark"]);
    // The cut answer stays in the chat, marked, and the new answer follows.
    const shown = shownText(mention);
    expect(shown).toMatch(/Here is a long answer that\s+⚡ _interrupted by Alice_[\s\S]*A haiku it is\./);
  });

  it("a reply starting with `!!` is an interrupt at once, delivered without the prefix", async () => {
    const tag = e2e.tag(hangingAnswer(), textReply("Python then."));
    const mention = e2e.mention(tag, "write it in Go");
    await e2e.waitForText(mention, CUT_TEXT);
    const reply = e2e.reply(mention, "!! stop, use Python");
    await e2e.waitForRunsEnded(mention);

    expect(await e2e.requests(tag)[0]!.outcome).toBe("client-disconnected");
    expect(userTexts(e2e.requests(tag)[1]).at(-1)).toBe("Alice: stop, use Python");
    expect(messagesOf(tag, 1).find((message) => message.role === "assistant")?.content).toBe(
      `${CUT_TEXT}\n\n[This answer was cut off here by a new message from Alice.]`,
    );
    await e2e.waitForReaction(reply, "white_check_mark");
    expect(e2e.reactions(reply)).toEqual(["white_check_mark"]);
    expect(marksAdded(reply)).toEqual(["zap", "white_check_mark"]);
    expect(shownText(mention)).toMatch(/⚡ _interrupted by Alice_[\s\S]*Python then\./);
  });

  it("someone who is neither the author nor an approver cannot ⚡ another person's reply", async () => {
    const tag = e2e.tag(hangingAnswer(), textReply("Done."));
    const mention = e2e.mention(tag, "write an essay");
    await e2e.waitForText(mention, CUT_TEXT);
    const reply = e2e.reply(mention, "shorter please");
    await e2e.waitForReaction(reply, "compass");
    await e2e.slack.react(BOB, reply, "zap").ack;
    // Alice's ⏳ after Bob's ⚡ is the barrier: once it shows, Bob's reaction was handled and changed nothing.
    e2e.slack.react(ALICE, reply, "hourglass_flowing_sand");
    await e2e.waitForReaction(reply, "hourglass_flowing_sand");
    expect(await e2e.redis.hget(keysOf(mention).disposition, reply.ts)).toBe("followUp");
    expect(e2e.requests(tag)).toHaveLength(1);
    expect(e2e.requests(tag)[0]!.clientDisconnected).toBe(false);
    e2e.slack.react(ALICE, reply, "zap");
    await e2e.waitForRunsEnded(mention);
    expect(marksAdded(reply)).toEqual(["compass", "hourglass_flowing_sand", "zap", "white_check_mark"]);
    expect(userTexts(e2e.requests(tag)[1]).at(-1)).toBe("Alice: shorter please");
  });
});

describe("approval waits on Slack (gateway and worker processes)", () => {
  const deploy = (id: string, service = "api") =>
    toolCallReply([{ id, name: "deploy", arguments: { service } }]);

  it("a text reply while a card waits gets the private notice and is read after the decision", async () => {
    const tag = e2e.tag(deploy("n1"), textReply("Deployed, and noted."), textReply("unused"));
    const mention = e2e.mention(tag, "deploy the api");
    const card = await e2e.slack.store.waitFor("a card", () => cards(mention)[0]);
    const reply = e2e.reply(mention, "also tell me when it is done", BOB);
    const notice = await e2e.slack.store.waitFor("the notice to Bob", () =>
      e2e.slack.store.ephemerals.find((entry) => entry.user === BOB && entry.threadTs === mention.ts),
    );
    expect(notice.text).toBe(
      "Still waiting for Approve/Deny on `deploy`; your message will be read after it.",
    );
    await e2e.waitForReaction(reply, "compass");
    expect(e2e.requests(tag)).toHaveLength(1); // the reply decided nothing and started nothing
    expect(hasButtons(card)).toBe(true);

    e2e.slack.click(ALICE, card, "threadline:approve:");
    await decided(card, "Approved* by Alice");
    await e2e.waitForRunsEnded(mention);
    const next = e2e.requests(tag)[1];
    expect(toolResults(next)).toEqual(["deployed api"]);
    expect(userTexts(next).at(-1)).toBe("Bob: also tell me when it is done");
    await e2e.waitForReaction(reply, "white_check_mark");
    expect(e2e.slack.store.ephemerals.filter((entry) => entry.user === ALICE)).toEqual([]);
  });

  it("the reminder mentions the requester once in the thread, also after a heartbeat", async () => {
    const tag = e2e.tag(deploy("r1"), textReply("Deployed after the reminder."));
    const mention = e2e.mention(tag, "deploy the api");
    const card = await e2e.slack.store.waitFor("a card", () => cards(mention)[0]);
    const reminder = await e2e.slack.store.waitFor("the reminder", () => reminders(mention, ALICE)[0]);
    expect(reminder.text).toBe(
      `<@${ALICE}> \`deploy\` is waiting for your approval: use Approve or Deny on the card above.`,
    );
    expect(reminder.threadTs).toBe(mention.ts);
    // Wait for the worker's next lease heartbeat (it renews the lease at a third of its 30 s), which wakes
    // the approval wait to re-read the record: still one reminder.
    const lease = keysOf(mention).lease;
    const before = await e2e.redis.pttl(lease);
    await e2e.until("a lease heartbeat", async () => (await e2e.redis.pttl(lease)) > before + 1_000, 30_000);
    expect(reminders(mention, ALICE)).toHaveLength(1);
    e2e.slack.click(ALICE, card, "threadline:approve:");
    await decided(card, "Approved* by Alice");
    await e2e.waitForRunsEnded(mention);
    expect(reminders(mention, ALICE)).toHaveLength(1);
    expect(toolResults(e2e.requests(tag)[1])).toEqual(["deployed api"]);
  }, 60_000);

  it("two calls of one batch that ask get a card each and resolve independently, in reverse order", async () => {
    const tag = e2e.tag(
      toolCallReply([
        { id: "b1", name: "deploy", arguments: { service: "api" } },
        { id: "b2", name: "deploy", arguments: { service: "web" } },
      ]),
      textReply("One deployed, one denied."),
    );
    const mention = e2e.mention(tag, "deploy api and web");
    const [apiCard, webCard] = await e2e.slack.store.waitFor("two cards", () => {
      const found = cards(mention);
      return found.length >= 2 ? found : undefined;
    });
    expect(apiCard!.text).toContain("service: api");
    expect(webCard!.text).toContain("service: web");
    // The second card first: deny it; the first stays pending.
    e2e.slack.click(ALICE, webCard!, "threadline:deny:");
    await decided(webCard!, "Denied* by Alice");
    expect(hasButtons(apiCard!)).toBe(true);
    expect(e2e.requests(tag)).toHaveLength(1);
    e2e.slack.click(ALICE, apiCard!, "threadline:approve:");
    await decided(apiCard!, "Approved* by Alice");
    await e2e.waitForRunsEnded(mention);
    expect(e2e.requests(tag)).toHaveLength(2);
    const results = toolResults(e2e.requests(tag)[1]);
    expect(results).toHaveLength(2);
    expect(results[0]).toBe("deployed api");
    expect(results[1]).toContain("denied by Alice");
    expect(cards(mention)).toHaveLength(2);
  });
});
