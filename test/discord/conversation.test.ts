import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chunks, textReply, toolCallReply } from "../fakes/openai-server.js";
import { DiscordE2E, userTexts } from "./e2e-harness.js";

let e2e: DiscordE2E;
beforeAll(async () => {
  e2e = await DiscordE2E.start({ shards: 2 });
}, 120_000);
afterAll(async () => {
  await e2e?.close();
});

const gateCall = (value: string) =>
  toolCallReply([{ id: `call-${value}`, name: "gate", arguments: { value } }]);

describe("Discord conversations (sharded gateway and worker processes, fake Discord, real Redis)", () => {
  it("starts a thread on a mention, acknowledges it with 👀 and streams the answer into the thread", async () => {
    const answer = "Here is the **summary** of the release notes, in several short parts so that it streams.";
    const tag = e2e.tag({ ...textReply(answer, { pieceSize: 3 }), delayMs: 15 });
    const channel = e2e.channel();
    const mention = e2e.mention(channel, tag, "summarize the release notes");
    await e2e.waitForRuns(mention.id, 1, answer);

    expect(e2e.discord.hasReaction(mention.id, "👀")).toBe(true);
    expect(e2e.discord.state.channel(mention.id)).toMatchObject({
      parentId: channel,
      name: `[${tag}] summarize the release notes`,
    });
    expect(userTexts(e2e.requests(tag)[0])).toEqual([`Alice: [${tag}] summarize the release notes`]);
    const bot = e2e.discord.state
      .channelMessages(mention.id)
      .filter((m) => m.authorId === e2e.discord.bot.id);
    expect(bot).toHaveLength(2);
    const draft = bot[0]!;
    // The draft grew by edits (each text extends the previous one), then gave way to a fresh final message.
    expect(draft.history.length).toBeGreaterThan(2);
    for (let i = 1; i < draft.history.length; i++) {
      expect(draft.history[i]!.startsWith(draft.history[i - 1]!.replace(/\n-# .*$/, ""))).toBe(true);
    }
    // The edited draft is deleted in the background once the final message is posted.
    await e2e.discord.waitFor(() => draft.deleted);
    expect(e2e.discord.botMessages(mention.id).map((m) => m.id)).toEqual([bot[1]!.id]);
    expect(bot[1]!.content).toBe(`${answer}\n\n-# 1 turn · 15 tokens`);
    expect(e2e.discord.typing.get(mention.id)).toBeGreaterThan(0);
  });

  it("delivers a reply sent during a tool call as steering in the very next model request", async () => {
    const tag = e2e.tag(gateCall("steer"), textReply("switched to blue"));
    const channel = e2e.channel();
    const mention = e2e.mention(channel, tag, "paint the fence");
    await e2e.waitForText(mention.id, "🔧 gate …");
    const reply = e2e.discord.say(mention.id, e2e.alice, "use blue instead");
    await e2e.waitForReactions(reply.id, ["🧭"]);
    await e2e.openGate("steer");
    await e2e.waitForRuns(mention.id, 1, "switched to blue");

    const requests = e2e.requests(tag);
    expect(requests).toHaveLength(2);
    const roles = (requests[1]!.body as { messages: { role: string }[] }).messages.map((m) => m.role);
    expect(roles).toEqual(["system", "user", "assistant", "tool", "user"]);
    expect(userTexts(requests[1]).at(-1)).toBe("Alice: use blue instead");
    await e2e.waitForReactions(reply.id, ["✅"]);
  });

  it("moves a queued reply to follow-up with ⏳ and back with 🧭; a flip after delivery changes nothing", async () => {
    const tag = e2e.tag(gateCall("flip"), textReply("steered"), textReply("followed up"), textReply("again"));
    const channel = e2e.channel();
    const mention = e2e.mention(channel, tag, "start working");
    await e2e.waitForText(mention.id, "🔧 gate …");
    const first = e2e.discord.say(mention.id, e2e.alice, "first remark");
    const second = e2e.discord.say(mention.id, e2e.alice, "second remark");
    await e2e.waitForReactions(first.id, ["🧭"]);
    await e2e.waitForReactions(second.id, ["🧭"]);
    e2e.discord.react(e2e.alice, first.id, "⏳");
    await e2e.waitForReactions(first.id, ["⏳"]);
    e2e.discord.react(e2e.alice, first.id, "🧭");
    await e2e.waitForReactions(first.id, ["🧭"]);
    e2e.discord.react(e2e.alice, second.id, "⏳");
    await e2e.waitForReactions(second.id, ["⏳"]);
    await e2e.openGate("flip");
    await e2e.waitForRuns(mention.id, 1, "followed up");

    const requests = e2e.requests(tag);
    expect(requests).toHaveLength(3);
    expect(userTexts(requests[1]).slice(1)).toEqual(["Alice: first remark"]);
    expect(userTexts(requests[2]).slice(1)).toEqual(["Alice: first remark", "Alice: second remark"]);
    await e2e.waitForReactions(first.id, ["✅"]);
    await e2e.waitForReactions(second.id, ["✅"]);

    // Delivered: its disposition is final. The next reply (handled after the reaction) proves it was seen.
    e2e.discord.react(e2e.alice, first.id, "⏳");
    e2e.discord.say(mention.id, e2e.alice, "one more thing");
    await e2e.waitForRuns(mention.id, 2, "again");
    expect(e2e.discord.botReactions(first.id)).toEqual(["✅"]);
    expect(e2e.requests(tag)).toHaveLength(4);
  });

  it("applies an edit of a queued reply and drops a deleted one", async () => {
    const tag = e2e.tag(gateCall("edit"), textReply("done with green"));
    const channel = e2e.channel();
    const mention = e2e.mention(channel, tag, "choose a color");
    const thread = e2e.threadRef(mention, channel);
    await e2e.waitForText(mention.id, "🔧 gate …");
    const edited = e2e.discord.say(mention.id, e2e.alice, "use red");
    const deleted = e2e.discord.say(mention.id, e2e.alice, "ignore me");
    await e2e.waitForReactions(deleted.id, ["🧭"]);
    e2e.discord.edit(edited.id, "use green");
    e2e.discord.delete(deleted.id);
    await e2e.until("the edit and the deletion to reach the queue", async () => {
      const [a, b] = await Promise.all([e2e.queued(thread, edited.id), e2e.queued(thread, deleted.id)]);
      return (a.body ?? "").includes("use green") && b.state === "withdrawn";
    });
    await e2e.openGate("edit");
    await e2e.waitForRuns(mention.id, 1, "done with green");

    const texts = userTexts(e2e.requests(tag)[1]);
    expect(texts.slice(1)).toEqual(["Alice: use green"]);
  });

  it("stops a run mid-stream when the requester reacts 🛑 on the bot's reply", async () => {
    const stream = textReply("Counting slowly: one two three four five six seven eight", { pieceSize: 4 });
    const tag = e2e.tag({ ...stream, hangAfter: 5 });
    const channel = e2e.channel();
    const mention = e2e.mention(channel, tag, "count for me");
    const draft = await e2e.waitForText(mention.id, "Counting");
    e2e.discord.react(e2e.alice, draft.id, "🛑");
    const final = await e2e.waitForRuns(mention.id, 1, "Stopped by Alice");

    expect(await e2e.requests(tag)[0]!.outcome).toBe("client-disconnected");
    expect(final.content).toContain("Counting");
    await e2e.waitForIdle(e2e.threadRef(mention, channel));
    expect(e2e.requests(tag)).toHaveLength(1);
  });

  it("stops a run mid-tool on 🛑 on the mention; the tool is aborted and queued replies are marked ⏹", async () => {
    const tag = e2e.tag(gateCall("never"));
    const channel = e2e.channel();
    const mention = e2e.mention(channel, tag, "wait forever");
    const thread = e2e.threadRef(mention, channel);
    await e2e.waitForText(mention.id, "🔧 gate …");
    const queued = e2e.discord.say(mention.id, e2e.alice, "are you done?");
    await e2e.waitForReactions(queued.id, ["🧭"]);
    e2e.discord.react(e2e.alice, mention.id, "🛑");
    const final = await e2e.waitForRuns(mention.id, 1, "Stopped by Alice");

    expect(final.content).toContain("🔧 gate ✗");
    await e2e.waitForReactions(queued.id, ["⏹️"]);
    const transcript = await e2e.transcript(thread);
    const result = transcript.find((m) => (m as { role: string }).role === "toolResult") as
      | { isError: boolean; content: { text: string }[] }
      | undefined;
    expect(result?.isError).toBe(true);
    expect(result?.content[0]?.text).toContain("aborted");
    expect(e2e.requests(tag)).toHaveLength(1);
    expect((await e2e.queued(thread, queued.id)).state).toBe("notprocessed");
  });

  it("starts exactly one run when a resumed gateway session replays the mention", async () => {
    const tag = e2e.tag(textReply("first answer"), textReply("second answer"));
    const channel = e2e.channel();
    const mention = e2e.mention(channel, tag, "remember this");
    await e2e.waitForRuns(mention.id, 1, "first answer");
    const session = [...e2e.discord.gateway.sessions.values()].find((s) =>
      s.events.some(
        (event) => event.t === "MESSAGE_CREATE" && (event.d as { id?: string }).id === mention.id,
      ),
    )!;
    const resumes = session.resumes;
    const identifies = e2e.discord.gateway.identifies.length;
    e2e.discord.gateway.replayFrom = session.events.find(
      (event) => event.t === "MESSAGE_CREATE" && (event.d as { id?: string }).id === mention.id,
    )!.s;
    session.socket?.close(4000, "test: connection lost");
    await e2e.discord.waitFor(() => session.resumes > resumes);
    // Handled after the replayed mention (same thread, same order): its run shows whether a second one ran.
    e2e.discord.say(mention.id, e2e.alice, "again");
    await e2e.waitForRuns(mention.id, 2, "second answer");

    expect(e2e.discord.gateway.identifies).toHaveLength(identifies);
    // The fake replayed the mention on the resume (replayFrom); the adapter recognized it before any side
    // effect: one thread start, one 👀, one run per message.
    expect(
      e2e.discord.requestsTo("POST", new RegExp(`^/channels/${channel}/messages/${mention.id}/threads$`)),
    ).toHaveLength(1);
    const acks = e2e.discord.requestsTo(
      "PUT",
      new RegExp(`^/channels/${channel}/messages/${mention.id}/reactions/`),
    );
    expect(acks).toHaveLength(1);
    const requests = e2e.requests(tag);
    expect(requests).toHaveLength(2);
    expect(userTexts(requests[1])).toEqual([`Alice: [${tag}] remember this`, "Alice: again"]);
  });

  it("waits out a 429 on a message edit and loses no text", async () => {
    const answer = "A rate limited answer that still arrives complete, every single word of it, in order.";
    const tag = e2e.tag({ ...textReply(answer, { pieceSize: 3 }), delayMs: 20 });
    const channel = e2e.channel();
    const mention = e2e.mention(channel, tag, "answer despite limits");
    e2e.discord.limits.inject("PATCH", new RegExp(`^/channels/${mention.id}/messages/\\d+$`), 400);
    const final = await e2e.waitForRuns(mention.id, 1, answer);

    const edits = e2e.discord.requestsTo("PATCH", new RegExp(`^/channels/${mention.id}/messages/`));
    const limited = edits.findIndex((request) => request.status === 429);
    expect(limited).toBeGreaterThanOrEqual(0);
    expect(edits.slice(limited + 1).some((request) => request.status === 200)).toBe(true);
    expect(final.content).toContain(answer);
  });

  it("splits a long answer at 2,000 characters and never inside a code fence", async () => {
    const code = Array.from(
      { length: 110 },
      (_, i) => `console.log("line ${String(i).padStart(3, "0")} of the listing");`,
    );
    const answer = `Here is the script:\n\n\`\`\`js\n${code.join("\n")}\n\`\`\`\n\nThat is the whole listing.`;
    const tag = e2e.tag(textReply(answer, { pieceSize: 400 }));
    const channel = e2e.channel();
    const mention = e2e.mention(channel, tag, "print the script");
    await e2e.waitForRuns(mention.id, 1, "whole listing");

    const messages = e2e.discord.botMessages(mention.id);
    expect(messages.length).toBeGreaterThanOrEqual(3);
    const codeLines: string[] = [];
    for (const message of messages) {
      expect(message.content.length).toBeLessThanOrEqual(2000);
      const fences = message.content.split("\n").filter((line) => line.startsWith("```"));
      expect(fences.length % 2).toBe(0);
      codeLines.push(...message.content.split("\n").filter((line) => line.startsWith("console.log")));
    }
    expect(codeLines).toEqual(code);
  });

  it("treats a DM channel as one thread", async () => {
    const tag = e2e.tag(textReply("hello in the DM"), textReply("still the same conversation"));
    const first = e2e.discord.dm(e2e.alice, `[${tag}] hi there`);
    await e2e.waitForRuns(first.channelId, 1, "hello in the DM");
    const second = e2e.discord.dm(e2e.alice, "how are you?");
    await e2e.waitForRuns(first.channelId, 2, "still the same conversation");

    expect(second.channelId).toBe(first.channelId);
    expect(e2e.discord.hasReaction(first.id, "👀")).toBe(true);
    expect(userTexts(e2e.requests(tag)[1])).toEqual([`Alice: [${tag}] hi there`, "Alice: how are you?"]);
  });

  it("brings the earlier messages of an existing thread along when mentioned there", async () => {
    const tag = e2e.tag(textReply("Friday it is"));
    const channel = e2e.channel();
    const root = e2e.discord.say(channel, e2e.alice, `[${tag}] let's plan the launch`);
    const thread = e2e.discord.startThread(root.id, e2e.alice, "launch");
    e2e.discord.say(thread, e2e.bob, "I think Friday works");
    e2e.mention(thread, tag, "what do you think?");
    await e2e.waitForRuns(thread, 1, "Friday it is");

    const [text] = userTexts(e2e.requests(tag)[0]);
    expect(text).toBe(
      [
        "[Earlier messages in this thread]",
        `Alice: [${tag}] let's plan the launch`,
        "Bob: I think Friday works",
        "[End of earlier messages]",
        "",
        `Alice: [${tag}] what do you think?`,
      ].join("\n"),
    );
  });

  it("answers inside a forum post it is mentioned in", async () => {
    const tag = e2e.tag(textReply("Looking into the crash"));
    const forum = e2e.discord.addChannel(e2e.guild, "bugs", "forum");
    const post = e2e.discord.forumPost(forum, e2e.alice, "Crash on start", `[${tag}] the app crashes`, {
      mention: true,
    });
    await e2e.waitForRuns(post.id, 1, "Looking into the crash");

    expect(e2e.discord.hasReaction(post.id, "👀")).toBe(true);
    expect(e2e.discord.botMessages(forum)).toEqual([]);
  });

  it("runs sharded: each gateway process owns its shard and each message is handled once", async () => {
    const tag = e2e.tag(textReply("hello from the other shard"));
    const channel = e2e.channel(e2e.otherGuild);
    const mention = e2e.mention(channel, tag, "anyone there?");
    await e2e.waitForRuns(mention.id, 1, "hello from the other shard");

    const shards = e2e.discord.gateway.identifies.map((identify) => identify.shard.join("/")).sort();
    expect(shards).toEqual(["0/2", "1/2"]);
    const acks = e2e.discord.requestsTo(
      "PUT",
      new RegExp(`^/channels/${channel}/messages/${mention.id}/reactions/`),
    );
    expect(acks).toHaveLength(1);
    expect(e2e.requests(tag)).toHaveLength(1);
  });
});

void chunks;
