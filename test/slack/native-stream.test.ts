import { afterEach, describe, expect, it } from "vitest";
import type { ApprovalCard, ThreadRef } from "../../src/chat/index.js";
import { createSlackClient, SlackApi } from "../../src/slack/api.js";
import { memoryRecipientStore, SlackOutbound } from "../../src/slack/index.js";
import { type FakeSlackOptions, FakeSlackServer } from "../fakes/slack-server.js";
import { FAKE_STREAM_LIMITS } from "../fakes/slack-streams.js";

let slack: FakeSlackServer;
afterEach(async () => {
  await slack?.close();
});

const FAST_RETRY = { retries: 2, factor: 1, minTimeout: 10, maxTimeout: 20 };

/** A simulated clock shared by the fake Slack and the outbound: minutes pass in milliseconds. */
function simulatedClock() {
  let now = 1_800_000_000_000;
  return {
    now: () => now,
    advance: (ms: number) => {
      now += ms;
    },
  };
}

async function setup(
  options: FakeSlackOptions & { outboundNow?: () => number; statusRefreshMs?: number } = {},
) {
  slack = await FakeSlackServer.start(options);
  const recipients = memoryRecipientStore();
  const api = new SlackApi(
    createSlackClient({ token: slack.config.botToken, apiUrl: slack.apiUrl, retry: FAST_RETRY }),
  );
  const outbound = new SlackOutbound({
    api,
    recipients,
    ...(options.outboundNow ? { now: options.outboundNow } : {}),
    ...(options.statusRefreshMs ? { statusRefreshMs: options.statusRefreshMs } : {}),
  });
  const root = slack.post({ user: "U0ALICE", channel: "C1", text: "write a long answer" });
  const thread: ThreadRef = {
    platform: "slack",
    workspace: slack.config.teamId,
    channel: "C1",
    thread: root.ts,
  };
  await recipients.set(thread, "U0ALICE");
  await recipients.setTitle(thread, "write a long answer");
  return { outbound, thread, root };
}

/** A long answer: numbered paragraphs with a code block in the middle, `chars` long. */
function longAnswer(chars: number): string {
  const parts: string[] = [];
  let length = 0;
  for (let n = 1; length < chars; n++) {
    const part =
      n % 17 === 0
        ? `\`\`\`ts\n${Array.from({ length: 30 }, (_, i) => `const line${n}_${i} = ${i};`).join("\n")}\n\`\`\``
        : `Paragraph ${n}: ${"lorem ipsum dolor sit amet ".repeat(8).trim()}.`;
    parts.push(part);
    length += part.length + 2;
  }
  const text = parts.join("\n\n");
  // End after a paragraph, never inside the code block.
  return text.slice(0, text.lastIndexOf("\n\nParagraph", chars));
}

/** The bot's messages joined back into one text: a fence closed at a rotation and reopened is one block. */
function readBack(texts: string[]): string {
  let joined = "";
  for (const [index, text] of texts.entries()) {
    let part = text;
    const next = texts[index + 1];
    if (next !== undefined && /^```\S*\n/.test(next) && part.endsWith("\n```")) part = part.slice(0, -4);
    if (index > 0 && /^```\S*\n/.test(part)) {
      const reopened = /^```\S*\n/.exec(part)![0];
      if (texts[index - 1]!.endsWith("\n```")) part = part.slice(reopened.length);
    }
    joined += part;
  }
  return joined;
}

describe("native streams that never lose text", () => {
  it("a 30,000-character answer streamed over 6 minutes arrives complete, in order, exactly once", async () => {
    const clock = simulatedClock();
    const { outbound, thread, root } = await setup({ now: clock.now, outboundNow: clock.now });
    const answer = longAnswer(30_000);
    const steps = 120;
    await outbound.setStatus(thread, "is thinking…");
    const { id } = await outbound.post(thread, answer.slice(0, 100));
    for (let step = 1; step <= steps; step++) {
      clock.advance(3_000); // 120 × 3 s = 6 minutes
      await outbound.edit(thread, id, answer.slice(0, Math.ceil((answer.length * step) / steps)));
    }
    await outbound.endRun(thread);
    const messages = slack.store.botMessages("C1", root.ts, slack.config.botUserId);
    expect(messages.length).toBeGreaterThanOrEqual(3);
    for (const message of messages) {
      expect([...message.text].length).toBeLessThanOrEqual(FAKE_STREAM_LIMITS.maxStreamChars);
      expect(message.text.split("\n").filter((line) => line.startsWith("```")).length % 2).toBe(0);
      expect(message.streaming).toBe(false);
    }
    expect(readBack(messages.map((message) => message.text))).toBe(answer);
    // Rotations kept the session working; only the end made it active.
    const history = slack.store.session("C1", root.ts)?.history ?? [];
    expect(history[0]).toBe("processing");
    expect(history.slice(0, -2)).not.toContain("active");
    expect(history.slice(-2)).toEqual(["active", "active"]);
    const refused = slack.store.calls.filter(
      (call) => call.method.endsWith("Stream") && call.outcome !== "ok",
    );
    expect(refused).toEqual([]);
  });

  it("continues in a new message when Slack ends a stream early or refuses text, replaying what it refused", async () => {
    const clock = simulatedClock();
    // Slack ends this stream after one minute, long before the four the outbound plans for.
    const { outbound, thread, root } = await setup({
      now: clock.now,
      outboundNow: clock.now,
      streamLifetimeMs: 60_000,
    });
    const { id } = await outbound.post(thread, "First part.");
    clock.advance(61_000);
    await outbound.edit(thread, id, "First part. Second part.");
    slack.failNext("chat.appendStream", { error: "msg_too_long" });
    await outbound.edit(thread, id, "First part. Second part. Third part.");
    await outbound.edit(thread, id, "First part. Second part. Third part. Fourth.");
    await outbound.endRun(thread);
    const texts = slack.store.botMessages("C1", root.ts, slack.config.botUserId).map((m) => m.text);
    expect(texts).toEqual(["First part.", " Second part.", " Third part. Fourth."]);
    const outcomes = slack.callsOf("chat.appendStream").map((call) => call.outcome);
    expect(outcomes).toEqual(["message_not_in_streaming_state", "msg_too_long", "ok"]);
  });

  it("splits one edit beyond the cap across streams, each within it", async () => {
    const { outbound, thread, root } = await setup();
    const answer = longAnswer(30_000);
    const { id } = await outbound.post(thread, "Start.");
    await outbound.edit(thread, id, `Start.${answer}`);
    await outbound.endRun(thread);
    const messages = slack.store.botMessages("C1", root.ts, slack.config.botUserId);
    expect(messages.length).toBeGreaterThanOrEqual(3);
    expect(readBack(messages.map((message) => message.text))).toBe(`Start.${answer}`);
    expect(slack.store.calls.filter((call) => call.outcome === "msg_too_long")).toEqual([]);
  });

  it("a rewrite whose chat.update fails still removes the continuations, so no text shows twice", async () => {
    const { outbound, thread, root } = await setup();
    const answer = longAnswer(30_000);
    const { id } = await outbound.post(thread, "Start.");
    await outbound.edit(thread, id, `Start.${answer}`); // several messages: the first and its continuations
    slack.failNext("chat.update", { error: "internal_error" });
    await expect(outbound.edit(thread, id, "Rewritten.")).rejects.toThrow();
    await outbound.edit(thread, id, "Rewritten, again.");
    await outbound.endRun(thread);
    const live = slack.store.botMessages("C1", root.ts, slack.config.botUserId).filter((m) => !m.deleted);
    expect(live.map((message) => message.text)).toEqual(["Rewritten, again."]);
  });

  it("drives the agent session: processing (titled), suspended while a card waits, processing, active", async () => {
    const { outbound, thread, root } = await setup();
    await outbound.setStatus(thread, "is thinking…");
    const { id } = await outbound.post(thread, "Let me check.");
    const card: ApprovalCard = {
      approvalId: "a1",
      toolName: "deploy",
      argumentsText: "{}",
      approvers: [],
      requesterName: "Alice",
      expiresAt: Date.now() + 60_000,
      state: { kind: "pending", waitingMessages: 0 },
    };
    const posted = await outbound.postApproval(thread, card);
    expect(slack.store.get("C1", id)?.streaming).toBe(false);
    await outbound.updateApproval(thread, posted.id, {
      ...card,
      state: { kind: "approved", by: { id: "U0ALICE", name: "Alice" }, at: Date.now(), always: false },
    });
    await outbound.post(thread, "Deployed.");
    await outbound.endRun(thread);
    const session = slack.store.session("C1", root.ts);
    expect(session?.title).toBe("write a long answer");
    // chat.stopStream's session_status counts as a status change too.
    expect(session?.history).toEqual([
      "processing",
      "suspended",
      "suspended",
      "processing",
      "active",
      "active",
    ]);
    const stops = slack.callsOf("chat.stopStream").map((call) => call.args.session_status);
    expect(stops).toEqual(["suspended", "active"]);
  });

  it("keeps the status alive while shown (Slack drops it after two minutes) and stops when it is cleared", async () => {
    // 40 ms stands in for the 90 s refresh under Slack's 120 s expiry.
    const { outbound, thread, root } = await setup({ statusRefreshMs: 40 });
    const sets = () =>
      slack.store.statuses.filter((s) => s.threadTs === root.ts && s.status === "is thinking…");
    await outbound.setStatus(thread, "is thinking…");
    await slack.store.waitFor("three refreshes", () => sets().length >= 4);
    await outbound.endRun(thread);
    const after = sets().length;
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(sets().length).toBe(after);
    const times = sets().map((s) => s.at);
    for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeLessThan(120_000);
    expect(slack.store.statuses.at(-1)?.status).toBe("");
  });
});
