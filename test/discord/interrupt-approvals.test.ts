import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { threadId } from "../../src/chat/index.js";
import { threadKeys } from "../../src/runs/index.js";
import type { FakeMessage } from "../fakes/discord-server.js";
import { chunks, type FakeReply, textReply, toolCallReply } from "../fakes/openai-server.js";
import { DiscordE2E, toolResults, userTexts } from "./e2e-harness.js";

/**
 * Issue #18 on Discord, with `threadline gateway` and `threadline worker` as separate processes: ⚡ (reaction
 * and `!!` prefix) cuts a streaming answer, a text reply while a card waits gets the private notice (a DM),
 * the reminder mentions the requester once, and two cards of one batch resolve independently.
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

const CUT_TEXT = "Here is a long answer that";
const ZAP = "⚡";
const STEER = "🧭";
const FOLLOW_UP = "⏳";
const DONE = "✅";

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

function messagesOf(tag: string, index: number): { role: string; content: unknown }[] {
  const body = e2e.requests(tag)[index]?.body as
    | { messages?: { role: string; content: unknown }[] }
    | undefined;
  return body?.messages ?? [];
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
  return [...added.filter((emoji) => emoji !== DONE), ...added.filter((emoji) => emoji === DONE)];
}

/** Resolves once the message showed ⚡ and ✅ and wears only ✅ (the gateway takes back a late ⚡). */
async function marksSettled(messageId: string): Promise<void> {
  await e2e.until(
    "⚡ and ✅ shown",
    () => marksAdded(messageId).includes(ZAP) && marksAdded(messageId).includes(DONE),
  );
  await e2e.waitForReactions(messageId, [DONE]);
}

/** The visible text of the bot's messages in a thread, oldest first. */
function shown(threadChannelId: string): string {
  return e2e.discord
    .botMessages(threadChannelId)
    .map((message) => message.content)
    .join("\n");
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

async function waitForDecision(card: FakeMessage, text: string): Promise<void> {
  await e2e.until(`the card to say "${text}"`, () => decision(card).includes(text));
}

/** A new conversation: Alice mentions the bot in a fresh channel; its thread has the mention's id. */
function start(tag: string, text: string) {
  const channel = e2e.channel();
  const mention = e2e.mention(channel, tag, text);
  return { channel, mention, thread: mention.id, ref: e2e.threadRef(mention, channel) };
}

/** The bot's reminders in a thread: plain messages that mention `userId`. */
function reminders(threadChannelId: string, userId: string): FakeMessage[] {
  return e2e.discord
    .botMessages(threadChannelId)
    .filter((message) => message.embeds.length === 0 && message.content.includes(`<@${userId}>`));
}

describe("⚡ on Discord (gateway and worker processes)", { timeout: 60_000 }, () => {
  it("a ⚡ reaction on a queued reply cuts the streaming answer; the next request carries the cut text and the reply", async () => {
    const tag = e2e.tag(hangingAnswer(), textReply("A haiku it is."));
    const { thread, ref } = start(tag, "write an essay");
    await e2e.waitForText(thread, CUT_TEXT);
    const reply = e2e.discord.say(thread, e2e.alice, "no, a haiku");
    await e2e.waitForReactions(reply.id, [STEER]);
    e2e.discord.react(e2e.alice, reply.id, ZAP);
    await e2e.waitForText(thread, "A haiku it is.");
    await e2e.waitForIdle(ref);

    expect(await e2e.requests(tag)[0]!.outcome).toBe("client-disconnected");
    expect(e2e.requests(tag)).toHaveLength(2);
    const next = messagesOf(tag, 1).filter((message) => message.role !== "system");
    expect(next.map((message) => message.role)).toEqual(["user", "assistant", "user"]);
    expect(next[1]?.content).toBe(
      `${CUT_TEXT}\n\n[This answer was cut off here by a new message from Alice.]`,
    );
    expect(userTexts(e2e.requests(tag)[1]).at(-1)).toBe("Alice: no, a haiku");

    await marksSettled(reply.id);
    expect(shownMarks(reply.id)).toEqual([STEER, ZAP, DONE]);
    expect(shown(thread)).toMatch(
      /Here is a long answer that\s+⚡ _interrupted by Alice_[\s\S]*A haiku it is\./,
    );
  });

  it("a reply starting with `!!` is an interrupt at once, delivered without the prefix", async () => {
    const tag = e2e.tag(hangingAnswer(), textReply("Python then."));
    const { thread, ref } = start(tag, "write it in Go");
    await e2e.waitForText(thread, CUT_TEXT);
    const reply = e2e.discord.say(thread, e2e.alice, "!! stop, use Python");
    await e2e.waitForText(thread, "Python then.");
    await e2e.waitForIdle(ref);

    expect(await e2e.requests(tag)[0]!.outcome).toBe("client-disconnected");
    expect(userTexts(e2e.requests(tag)[1]).at(-1)).toBe("Alice: stop, use Python");
    expect(messagesOf(tag, 1).find((message) => message.role === "assistant")?.content).toBe(
      `${CUT_TEXT}\n\n[This answer was cut off here by a new message from Alice.]`,
    );
    await marksSettled(reply.id);
    expect(shownMarks(reply.id)).toEqual([ZAP, DONE]);
    expect(shown(thread)).toMatch(/⚡ _interrupted by Alice_[\s\S]*Python then\./);
  });

  it("someone who is neither the author nor an approver cannot ⚡ another person's reply", async () => {
    const tag = e2e.tag(hangingAnswer(), textReply("Shorter."));
    const { thread, ref } = start(tag, "write an essay");
    await e2e.waitForText(thread, CUT_TEXT);
    const reply = e2e.discord.say(thread, e2e.alice, "shorter please");
    await e2e.waitForReactions(reply.id, [STEER]);
    e2e.discord.react(e2e.bob, reply.id, ZAP);
    // Alice's ⏳ after Bob's ⚡ is the barrier: once it shows, Bob's reaction was handled and changed nothing.
    e2e.discord.react(e2e.alice, reply.id, FOLLOW_UP);
    await e2e.waitForReactions(reply.id, [FOLLOW_UP]);
    const keys = threadKeys(e2e.prefix, threadId(ref));
    expect(await e2e.redis.hget(keys.disposition, reply.id)).toBe("followUp");
    expect(e2e.requests(tag)).toHaveLength(1);
    expect(e2e.requests(tag)[0]!.clientDisconnected).toBe(false);
    e2e.discord.react(e2e.alice, reply.id, ZAP);
    await e2e.waitForText(thread, "Shorter.");
    await e2e.waitForIdle(ref);
    await marksSettled(reply.id);
    expect(shownMarks(reply.id)).toEqual([STEER, FOLLOW_UP, ZAP, DONE]);
    expect(userTexts(e2e.requests(tag)[1]).at(-1)).toBe("Alice: shorter please");
  });
});

describe("approval waits on Discord (gateway and worker processes)", { timeout: 60_000 }, () => {
  const deploy = (id: string) => toolCallReply([{ id, name: "deploy", arguments: { service: "api" } }]);

  it("a text reply while a card waits gets the private notice (a DM) and is read after the decision", async () => {
    const tag = e2e.tag(deploy("n1"), textReply("Deployed, and noted."));
    const { thread, ref } = start(tag, "deploy the api");
    await e2e.discord.waitFor(() => cards(thread).length > 0);
    const card = cards(thread)[0]!;
    const reply = e2e.discord.say(thread, e2e.bob, "also tell me when it is done");
    const dm = () =>
      [...e2e.discord.state.channels.values()].find((channel) => channel.recipientId === e2e.bob.id);
    const notices = () => (dm() ? e2e.discord.botMessages(dm()!.id).map((message) => message.content) : []);
    await e2e.until("the notice to Bob", () =>
      notices().includes("Still waiting for Approve/Deny on `deploy`; your message will be read after it."),
    );
    await e2e.waitForReactions(reply.id, [STEER]);
    expect(e2e.requests(tag)).toHaveLength(1); // the reply decided nothing and started nothing
    expect(decision(card)).toBe("");

    e2e.discord.click(e2e.alice, card.id, buttonId(card, "approve"));
    await waitForDecision(card, "Approved by Alice");
    await e2e.waitForText(thread, "Deployed, and noted.");
    await e2e.waitForIdle(ref);
    const next = e2e.requests(tag)[1];
    expect(toolResults(next)).toEqual(["deployed api"]);
    expect(userTexts(next).at(-1)).toBe("Bob: also tell me when it is done");
    await e2e.waitForReactions(reply.id, [DONE]);
  });

  it("the reminder mentions the requester once in the thread (and notifies them), also after a heartbeat", async () => {
    const tag = e2e.tag(deploy("r1"), textReply("Deployed after the reminder."));
    const { thread, ref } = start(tag, "deploy the api");
    await e2e.discord.waitFor(() => cards(thread).length > 0);
    const card = cards(thread)[0]!;
    await e2e.discord.waitFor(() => reminders(thread, e2e.alice.id).length > 0);
    const [reminder] = reminders(thread, e2e.alice.id);
    expect(reminder!.content).toBe(
      `<@${e2e.alice.id}> \`deploy\` is waiting for your approval: use Approve or Deny on the card above.`,
    );
    // A mention the message's allowed_mentions suppress shows the name but sends no notification.
    expect(reminder!.pinged).toEqual([e2e.alice.id]);
    // Wait for the worker's next lease heartbeat (a third of its 30 s lease), which wakes the approval wait
    // to re-read the record: still one reminder.
    const lease = threadKeys(e2e.prefix, threadId(ref)).lease;
    const before = await e2e.redis.pttl(lease);
    await e2e.until("a lease heartbeat", async () => (await e2e.redis.pttl(lease)) > before + 1_000, 30_000);
    expect(reminders(thread, e2e.alice.id)).toHaveLength(1);
    e2e.discord.click(e2e.alice, card.id, buttonId(card, "approve"));
    await waitForDecision(card, "Approved by Alice");
    await e2e.waitForText(thread, "Deployed after the reminder.");
    await e2e.waitForIdle(ref);
    expect(reminders(thread, e2e.alice.id)).toHaveLength(1);
    expect(toolResults(e2e.requests(tag)[1])).toEqual(["deployed api"]);
  });

  it("two calls of one batch that ask get a card each and resolve independently, in reverse order", async () => {
    const tag = e2e.tag(
      toolCallReply([
        { id: "b1", name: "deploy", arguments: { service: "api" } },
        { id: "b2", name: "deploy", arguments: { service: "web" } },
      ]),
      textReply("One deployed, one denied."),
    );
    const { thread, ref } = start(tag, "deploy api and web");
    await e2e.discord.waitFor(() => cards(thread).length >= 2);
    const [apiCard, webCard] = cards(thread) as [FakeMessage, FakeMessage];
    expect(JSON.stringify(apiCard.embeds)).toContain("service: api");
    expect(JSON.stringify(webCard.embeds)).toContain("service: web");
    // The second card first: deny it; the first stays pending.
    e2e.discord.click(e2e.alice, webCard.id, buttonId(webCard, "deny"));
    await waitForDecision(webCard, "Denied by Alice");
    expect(decision(apiCard)).toBe("");
    expect(apiCard.components).not.toEqual([]);
    expect(e2e.requests(tag)).toHaveLength(1);
    e2e.discord.click(e2e.alice, apiCard.id, buttonId(apiCard, "approve"));
    await waitForDecision(apiCard, "Approved by Alice");
    await e2e.waitForText(thread, "One deployed, one denied.");
    await e2e.waitForIdle(ref);
    expect(e2e.requests(tag)).toHaveLength(2);
    const results = toolResults(e2e.requests(tag)[1]);
    expect(results).toHaveLength(2);
    expect(results[0]).toBe("deployed api");
    expect(results[1]).toContain("denied by Alice");
    expect(cards(thread)).toHaveLength(2);
  });
});
