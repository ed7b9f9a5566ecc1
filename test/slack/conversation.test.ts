import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { threadId } from "../../src/chat/index.js";
import { threadKeys } from "../../src/runs/index.js";
import { type FakeReply, textReply, toolCallReply } from "../fakes/openai-server.js";
import type { FakeMessage } from "../fakes/slack-server.js";
import { ALICE, BOB, CAROL, gate, type ModelStep, SlackE2E, userTexts } from "./e2e-harness.js";

let e2e: SlackE2E;
beforeAll(async () => {
  e2e = await SlackE2E.start();
}, 60_000);
afterAll(async () => {
  await e2e?.close();
});

/** A model step that answers only once the test opens its gate. */
function held(reply: FakeReply) {
  const g = gate();
  const step: ModelStep = async () => {
    await g.promise;
    return reply;
  };
  return { step, release: () => g.open() };
}

const lastUser = (tag: string, index: number) => userTexts(e2e.requests(tag)[index]!).at(-1);

async function requestArrived(tag: string, count: number) {
  await e2e.slack.store.waitFor(
    `${count} model request(s) for ${tag}`,
    () => e2e.requests(tag).length >= count,
  );
}

function keysOf(root: FakeMessage) {
  const thread = {
    platform: "slack" as const,
    workspace: e2e.slack.config.teamId,
    channel: root.channel,
    thread: root.ts,
  };
  return threadKeys(e2e.prefix, threadId(thread));
}

describe("Slack end to end (Socket Mode, separate gateway and worker processes)", () => {
  it("answers a mention in its thread: 👀 at once, a streamed reply, the thinking status set and cleared", async () => {
    const tag = e2e.tag(textReply("Hello **there**, I can help.", { pieceSize: 3 }));
    const mention = e2e.mention(tag, "hi bot");
    await e2e.waitForReaction(mention, "eyes");
    await e2e.waitForRunsEnded(mention);
    const [reply, ...rest] = e2e.botMessages(mention);
    expect(rest).toEqual([]);
    expect(reply?.threadTs).toBe(mention.ts);
    expect(reply?.streamed).toBe(true);
    expect(reply?.streaming).toBe(false);
    expect(reply?.text).toContain("Hello **there**, I can help.");
    expect(userTexts(e2e.requests(tag)[0]!)).toEqual([`Alice: [${tag}] hi bot`]);
    const statuses = e2e.slack.store.statuses.filter((s) => s.threadTs === mention.ts).map((s) => s.status);
    expect(statuses).toEqual(["is thinking…", ""]);
  });

  it("delivers a reply sent while the model works as steering in the very next model request", async () => {
    const first = held(textReply("Working on it."));
    const tag = e2e.tag(first.step, textReply("Blue it is."));
    const mention = e2e.mention(tag, "paint the shed");
    await requestArrived(tag, 1);
    const steer = e2e.reply(mention, "use blue instead");
    await e2e.waitForReaction(steer, "compass");
    first.release();
    await e2e.waitForRunsEnded(mention);
    expect(e2e.requests(tag)).toHaveLength(2);
    expect(lastUser(tag, 1)).toBe("Alice: use blue instead");
    await e2e.waitForReaction(steer, "white_check_mark");
    expect(e2e.reactions(steer)).toEqual(["white_check_mark"]);
    expect((await e2e.waitForText(mention, "Blue it is.")).text).toContain("Blue it is.");
  });

  it("⏳ turns a queued reply into a follow-up, 🧭 turns it back, and a flip after delivery changes nothing", async () => {
    const first = held(toolCallReply([{ id: "c1", name: "lookup", arguments: { query: "x" } }]));
    const tag = e2e.tag(first.step, textReply("Answer one."), textReply("Summary done."));
    const mention = e2e.mention(tag, "start");
    await requestArrived(tag, 1);
    const later = e2e.reply(mention, "when you are done, summarize");
    const flipped = e2e.reply(mention, "actually steer this");
    await e2e.waitForReaction(later, "compass");
    await e2e.waitForReaction(flipped, "compass");
    e2e.slack.react(ALICE, later, "hourglass_flowing_sand");
    await e2e.waitForReaction(later, "hourglass_flowing_sand");
    e2e.slack.react(ALICE, flipped, "hourglass_flowing_sand");
    await e2e.waitForReaction(flipped, "hourglass_flowing_sand");
    e2e.slack.react(ALICE, flipped, "compass");
    await e2e.slack.store.waitFor("flip back to steer", () => e2e.reactions(flipped).join() === "compass");
    expect(e2e.reactions(later)).toEqual(["hourglass_flowing_sand"]);
    first.release();
    await e2e.waitForRunsEnded(mention);
    expect(e2e.requests(tag)).toHaveLength(3);
    expect(lastUser(tag, 1)).toBe("Alice: actually steer this");
    expect(lastUser(tag, 2)).toBe("Alice: when you are done, summarize");
    await e2e.waitForReaction(later, "white_check_mark");
    expect(e2e.reactions(later)).toEqual(["white_check_mark"]);
    // Once delivered, the disposition is final: the flip is ignored and nothing is re-queued.
    await e2e.slack.react(ALICE, later, "compass").ack;
    const barrier = e2e.mention(e2e.tag(textReply("ok")), "barrier");
    await e2e.waitForRunsEnded(barrier);
    expect(e2e.reactions(later)).toEqual(["white_check_mark"]);
    expect(await e2e.redis.hget(keysOf(mention).state, later.ts)).toBe("delivered");
    expect(e2e.requests(tag)).toHaveLength(3);
  });

  it("applies an edit to a queued reply and withdraws a deleted one", async () => {
    const first = held(textReply("First answer."));
    const tag = e2e.tag(first.step, textReply("Second answer."));
    const mention = e2e.mention(tag, "start");
    await requestArrived(tag, 1);
    const edited = e2e.reply(mention, "use tpyo");
    const deleted = e2e.reply(mention, "never mind this");
    await e2e.waitForReaction(edited, "compass");
    await e2e.waitForReaction(deleted, "compass");
    e2e.slack.edit(edited, "use typo");
    e2e.slack.remove(deleted);
    const keys = keysOf(mention);
    await e2e.until("the edit and the withdrawal in Redis", async () => {
      const [body, state] = await Promise.all([
        e2e.redis.hget(keys.body, edited.ts),
        e2e.redis.hget(keys.state, deleted.ts),
      ]);
      return Boolean(body?.includes("use typo")) && state === "withdrawn";
    });
    first.release();
    await e2e.waitForRunsEnded(mention);
    const texts = userTexts(e2e.requests(tag)[1]!);
    expect(texts.slice(1)).toEqual(["Alice: use typo"]);
  });

  it("🛑 on the mention stops a streaming answer: the model stream is aborted and the reply says who stopped it", async () => {
    const long = textReply("word ".repeat(400), { pieceSize: 5 });
    const tag = e2e.tag({ ...long, hangAfter: 30 });
    const mention = e2e.mention(tag, "write a lot");
    await e2e.waitForText(mention, "word word");
    e2e.slack.react(ALICE, mention, "octagonal_sign");
    await e2e.waitForRunsEnded(mention);
    const request = e2e.requests(tag)[0]!;
    expect(await request.outcome).toBe("client-disconnected");
    expect(e2e.requests(tag)).toHaveLength(1);
    expect(e2e.botMessages(mention).at(-1)?.text).toContain("Stopped by Alice");
  });

  it("`stop` mid-tool aborts the tool, and a reply still queued is marked not processed", async () => {
    const tag = e2e.tag(toolCallReply([{ id: "s1", name: "sleep", arguments: { ms: 60_000 } }]));
    const mention = e2e.mention(tag, "take a nap");
    await e2e.waitForText(mention, "sleep");
    const queued = e2e.reply(mention, "and then wake up", BOB);
    await e2e.waitForReaction(queued, "compass");
    const stop = e2e.reply(mention, "stop");
    await e2e.waitForRunsEnded(mention);
    await e2e.waitForReaction(stop, "octagonal_sign");
    await e2e.waitForReaction(queued, "black_square_for_stop");
    expect(e2e.reactions(queued)).toEqual(["black_square_for_stop"]);
    const text = e2e.visibleTexts(mention).join("\n");
    expect(text).toContain("sleep was aborted");
    expect(text).toContain("Stopped by Alice");
    expect(e2e.requests(tag)).toHaveLength(1);
  });

  it("starts one run for a mention delivered as app_mention and message and retried with the same event id", async () => {
    const tag = e2e.tag(textReply("Only once."), textReply("should never be asked"));
    const mention = e2e.mention(tag, "count me once");
    const event = {
      type: "app_mention",
      user: ALICE,
      text: mention.text,
      ts: mention.ts,
      channel: mention.channel,
      event_ts: mention.ts,
    };
    await Promise.all([e2e.slack.event(event, "EvRETRY1").ack, e2e.slack.event(event, "EvRETRY1").ack]);
    await e2e.waitForRunsEnded(mention);
    const barrier = e2e.mention(e2e.tag(textReply("ok")), "barrier");
    await e2e.waitForRunsEnded(barrier);
    expect(e2e.requests(tag)).toHaveLength(1);
    expect(e2e.botMessages(mention)).toHaveLength(1);
    expect(
      e2e.slack
        .callsOf("reactions.add")
        .filter((call) => call.args.timestamp === mention.ts && call.outcome === "ok"),
    ).toHaveLength(1);
  });

  it("seeds a mention inside an existing thread with the thread's earlier messages and lists shared files", async () => {
    const root = e2e.slack.post({ user: BOB, channel: e2e.channel, text: "the build fails on main" });
    e2e.reply(root, "logs say OOM", CAROL);
    const tag = e2e.tag(textReply("Raise the memory limit."));
    const file = {
      name: "build.log",
      mimetype: "text/plain",
      size: 2048,
      permalink: "https://files.test/build.log",
    };
    const mention = e2e.slack.post({
      user: ALICE,
      channel: e2e.channel,
      threadTs: root.ts,
      text: `<@${e2e.slack.config.botUserId}> [${tag}] what's wrong?`,
      files: [file],
    });
    await e2e.waitForRunsEnded(root);
    expect(userTexts(e2e.requests(tag)[0]!)).toEqual([
      [
        "[Earlier messages in this thread]",
        "Bob: the build fails on main",
        "Carol: logs say OOM",
        "[End of earlier messages]",
        "",
        `Alice: [${tag}] what's wrong?`,
        "[attached files: build.log (text/plain, 2 KB) https://files.test/build.log]",
      ].join("\n"),
    ]);
    expect(e2e.botMessages(mention).at(-1)?.threadTs).toBe(root.ts);
  });

  it("survives a Socket Mode reconnect mid-run: the reply sent meanwhile arrives once, the run completes", async () => {
    const first = held(textReply("Still here."));
    const tag = e2e.tag(first.step, textReply("Got your note."));
    const mention = e2e.mention(tag, "long task");
    await requestArrived(tag, 1);
    const opens = e2e.slack.callsOf("apps.connections.open").length;
    e2e.slack.delivery.disconnectAll("refresh");
    const note = e2e.reply(mention, "note sent during the reconnect");
    await e2e.waitForReaction(note, "compass");
    expect(e2e.slack.callsOf("apps.connections.open").length).toBeGreaterThan(opens);
    first.release();
    await e2e.waitForRunsEnded(mention);
    expect(e2e.requests(tag)).toHaveLength(2);
    expect(userTexts(e2e.requests(tag)[1]!).filter((text) => text.includes("note sent"))).toEqual([
      "Alice: note sent during the reconnect",
    ]);
  });
});
