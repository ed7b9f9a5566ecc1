import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRunRenderer, type ThreadRef } from "../../src/chat/index.js";
import { createDiscordRest, DiscordOutbound, UNLIMITED_BUDGET } from "../../src/discord/index.js";
import { events } from "../chat/events.js";
import { FakeDiscordServer } from "../fakes/discord-server.js";

let fake: FakeDiscordServer;
let guild: string;
let channel: string;
const stats = { turns: 1, toolCalls: 0, inputTokens: 0, outputTokens: 0 };

beforeAll(async () => {
  fake = await FakeDiscordServer.start();
  guild = fake.addGuild("Acme");
  channel = fake.addChannel(guild, "general");
});
afterAll(async () => {
  await fake.close();
});

function outbound(options: { minEditIntervalMs?: number; typingRenewMs?: number } = {}): DiscordOutbound {
  const rest = createDiscordRest({ token: fake.token, apiUrl: fake.apiUrl, budget: UNLIMITED_BUDGET });
  return new DiscordOutbound({ rest, minEditIntervalMs: 0, ...options });
}

/** A thread started on a message of Alice's in the channel, as a mention would start it. */
function newThread(): ThreadRef {
  const alice = fake.addUser("Alice", [{ guildId: guild }]);
  const root = fake.say(channel, alice, "hello");
  fake.startThread(root.id, alice, "hello");
  return { platform: "discord", workspace: guild, channel, thread: root.id };
}

describe("DiscordOutbound (REST against the fake Discord)", () => {
  it("reposts a streamed, edited answer as a fresh final message and deletes the draft", async () => {
    const chat = outbound();
    const thread = newThread();
    const renderer = createRunRenderer({ outbound: chat, thread, footer: false });
    renderer.handle(events.turnStart());
    renderer.handle(events.assistantStart());
    renderer.handle(events.text("Hello"));
    await fake.waitFor(() => fake.botMessages(thread.thread).length === 1);
    renderer.handle(events.text(" world, streamed."));
    renderer.handle(events.assistantEnd());
    await renderer.finish({ kind: "completed" }, stats);
    const all = fake.state.channelMessages(thread.thread).filter((m) => m.authorId === fake.bot.id);
    await fake.waitFor(() => all[0]?.deleted === true);

    expect(all.map((m) => [m.history, m.deleted])).toEqual([
      [["Hello", "Hello world, streamed."], true],
      [["Hello world, streamed."], false],
    ]);
    expect(fake.typing.get(thread.thread)).toBe(1);
  });

  it("reposts the edited answer at endRun even when the status was cleared and shown again mid-run", async () => {
    const chat = outbound();
    const thread = newThread();
    await chat.setStatus(thread, "is thinking…");
    const draft = await chat.post(thread, "Draft");
    await chat.setStatus(thread, null);
    await chat.setStatus(thread, "is running deploy…");
    await chat.edit(thread, draft.id, "Final answer");
    await chat.endRun(thread);
    await fake.waitFor(() => fake.message(draft.id).deleted);
    expect(fake.botMessages(thread.thread).map((m) => [m.content, m.history])).toEqual([
      ["Final answer", ["Final answer"]],
    ]);
  });

  it("keeps a reply that was never edited (nothing to notify about again)", async () => {
    const chat = outbound();
    const thread = newThread();
    const renderer = createRunRenderer({ outbound: chat, thread, footer: false });
    renderer.handle(events.turnStart());
    renderer.handle(events.assistantStart());
    renderer.handle(events.text("All at once."));
    renderer.handle(events.assistantEnd());
    await renderer.finish({ kind: "completed" }, stats);

    const all = fake.state.channelMessages(thread.thread).filter((m) => m.authorId === fake.bot.id);
    expect(all.map((m) => [m.content, m.history.length, m.deleted])).toEqual([["All at once.", 1, false]]);
  });

  it("reacts on the message a thread was started on in the parent channel, and on replies in the thread", async () => {
    const chat = outbound();
    const thread = newThread();
    const alice = fake.addUser("Alice", [{ guildId: guild }]);
    const reply = fake.say(thread.thread, alice, "a reply");
    await chat.react(thread, thread.thread, "eyes");
    await chat.react(thread, reply.id, "compass");
    await chat.react(thread, reply.id, "compass");
    await chat.unreact(thread, reply.id, "hourglass_flowing_sand");
    await chat.unreact(thread, reply.id, "compass");
    await chat.react(thread, reply.id, "black_square_for_stop");

    expect(fake.botReactions(thread.thread)).toEqual(["👀"]);
    expect(fake.botReactions(reply.id)).toEqual(["⏹"]);
    const puts = fake.requestsTo("PUT", /\/reactions\//).map((r) => r.path.split("/messages/")[0]);
    expect(puts.slice(-4)).toEqual([
      `/channels/${channel}`,
      `/channels/${thread.thread}`,
      `/channels/${thread.thread}`,
      `/channels/${thread.thread}`,
    ]);
  });

  it("renews the typing indicator while a status is shown and stops when it is cleared", async () => {
    const chat = outbound({ typingRenewMs: 20 });
    const thread = newThread();
    await chat.setStatus(thread, "is thinking…");
    await chat.setStatus(thread, "is thinking…");
    await fake.waitFor(() => (fake.typing.get(thread.thread) ?? 0) >= 3);
    await chat.setStatus(thread, null);
    const count = fake.typing.get(thread.thread);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(fake.typing.get(thread.thread)).toBe(count);
  });

  it("sends a private notice as a DM, or addressed in the thread when no DM can be opened", async () => {
    const chat = outbound();
    const thread = newThread();
    const bob = fake.addUser("Bob", [{ guildId: guild }]);
    await chat.notify(thread, bob.id, "Too many messages are waiting.");
    const dm = [...fake.state.channels.values()].find((c) => c.recipientId === bob.id)!;
    expect(fake.botMessages(dm.id).map((m) => m.content)).toEqual(["Too many messages are waiting."]);

    await chat.notify(thread, "999999999999999999", "Not for DMs.");
    expect(fake.botMessages(thread.thread).map((m) => m.content)).toEqual([
      "<@999999999999999999> Not for DMs.",
    ]);
  });

  it("pings only the users postNotifying names (the approval reminder); a plain post pings nobody", async () => {
    const chat = outbound();
    const thread = newThread();
    const bob = fake.addUser("Bob", [{ guildId: guild }]);
    const carol = fake.addUser("Carol", [{ guildId: guild }]);
    const plain = await chat.post(thread, `<@${bob.id}> an answer that names Bob`);
    const reminder = await chat.postNotifying(thread, `<@${bob.id}> approve it (ask <@${carol.id}>)`, [
      bob.id,
    ]);
    expect(fake.message(plain.id).pinged).toEqual([]);
    expect(fake.message(reminder.id).pinged).toEqual([bob.id]);
  });

  it("treats deleting a message that is already gone as done", async () => {
    const chat = outbound();
    const thread = newThread();
    const posted = await chat.post(thread, "short-lived");
    await chat.delete(thread, posted.id);
    await expect(chat.delete(thread, posted.id)).resolves.toBeUndefined();
    await expect(chat.edit(thread, posted.id, "too late")).rejects.toMatchObject({ code: 10008 });
  });

  it("posts an approval card with long tool and requester names within Discord's component limits", async () => {
    const chat = outbound();
    const thread = newThread();
    const posted = await chat.postApproval(thread, {
      approvalId: "a".repeat(84),
      toolName: `deploy_${"t".repeat(120)}`,
      argumentsText: "service: api",
      approvers: ["Alice", "<@123>"],
      requesterName: `Alice ${"l".repeat(120)}`,
      expiresAt: Date.UTC(2030, 0, 1),
      state: { kind: "pending", waitingMessages: 0 },
    });
    const rows = fake.state.messages.get(posted.id)!.components as { components: { label: string }[] }[];
    expect(rows.map((row) => row.components.map((button) => button.label))).toEqual([
      [
        "Approve",
        "Deny",
        expect.stringMatching(/^Always allow deploy_t+… for Alice l+… in this thread$/),
        "Edit and approve…",
        "Deny with reason…",
      ],
      [expect.stringMatching(/^Always allow deploy_t+… for everyone here \(approvers\)$/)],
    ]);
  });
});
