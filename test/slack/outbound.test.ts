import { afterEach, describe, expect, it } from "vitest";
import type { ApprovalCard, ThreadRef } from "../../src/chat/index.js";
import {
  createSlackPlatform,
  memoryRecipientStore,
  type RecipientStore,
  SlackApiError,
  type SlackOutbound,
} from "../../src/slack/index.js";
import { type FakeSlackOptions, FakeSlackServer } from "../fakes/slack-server.js";

let slack: FakeSlackServer;
afterEach(async () => {
  await slack?.close();
});

/** The parts of a Block Kit block these tests read. */
interface SlackBlock {
  type: string;
  elements?: { action_id: string; text: { text: string }; style?: string; confirm?: unknown }[];
}

const FAST_RETRY = { retries: 3, factor: 1, minTimeout: 10, maxTimeout: 50 };

async function setup(options: FakeSlackOptions = {}, recipients?: RecipientStore) {
  slack = await FakeSlackServer.start(options);
  const platform = createSlackPlatform({
    botToken: slack.config.botToken,
    apiUrl: slack.apiUrl,
    retry: FAST_RETRY,
    ...(recipients ? { recipients } : {}),
  });
  const root = slack.post({ user: "U0ALICE", channel: "C1", text: "hello" });
  const thread: ThreadRef = {
    platform: "slack",
    workspace: slack.config.teamId,
    channel: "C1",
    thread: root.ts,
  };
  return { outbound: platform.outbound as SlackOutbound, thread, root };
}

describe("SlackOutbound", () => {
  it("streams natively: post starts a stream, appending edits append, a rewrite stops it and updates", async () => {
    const recipients = memoryRecipientStore();
    const { outbound, thread } = await setup({}, recipients);
    await recipients.set(thread, "U0ALICE");
    const { id } = await outbound.post(thread, "Hello *world*");
    await outbound.edit(thread, id, "Hello *world*, more");
    const message = slack.store.get("C1", id)!;
    expect(message.streaming).toBe(true);
    expect(message.text).toBe("Hello **world**, more");
    await outbound.edit(thread, id, "Hello *world*, rewritten");
    expect(message.streaming).toBe(false);
    expect(message.text).toBe("Hello *world*, rewritten");
    expect(slack.store.calls.map((call) => call.method).filter((m) => m.startsWith("chat."))).toEqual([
      "chat.startStream",
      "chat.appendStream",
      "chat.stopStream",
      "chat.update",
    ]);
    const start = slack.callsOf("chat.startStream")[0]!;
    expect(start.args).toMatchObject({
      recipient_user_id: "U0ALICE",
      recipient_team_id: "T0FAKE",
      thread_ts: thread.thread,
    });
  });

  it("streams to the recipient looked up when the run starts, and stops when the status is cleared", async () => {
    const recipients = memoryRecipientStore();
    const { outbound, thread } = await setup({}, recipients);
    await recipients.set(thread, "U0ALICE");
    await outbound.setStatus(thread, "is thinking…");
    const { id } = await outbound.post(thread, "Done.");
    expect(slack.store.get("C1", id)?.streaming).toBe(true);
    await outbound.endRun(thread);
    expect(slack.store.get("C1", id)?.streaming).toBe(false);
  });

  it("falls back to post + chat.update where streaming is unavailable, asking only once per workspace", async () => {
    const recipients = memoryRecipientStore();
    const { outbound, thread } = await setup({ streaming: false }, recipients);
    await recipients.set(thread, "U0ALICE");
    const first = await outbound.post(thread, "one");
    await outbound.edit(thread, first.id, "one two");
    await outbound.post(thread, "three");
    expect(slack.callsOf("chat.startStream")).toHaveLength(1);
    expect(slack.callsOf("chat.postMessage")).toHaveLength(2);
    expect(slack.store.get("C1", first.id)?.text).toBe("one two");
  });

  it("posts (no stream) in a channel when the recipient is unknown", async () => {
    const { outbound, thread } = await setup({}, memoryRecipientStore());
    await outbound.post(thread, "hi");
    expect(slack.callsOf("chat.startStream")).toEqual([]);
    expect(slack.callsOf("chat.postMessage")).toHaveLength(1);
  });

  it("reacts and unreacts idempotently", async () => {
    const { outbound, thread, root } = await setup();
    await outbound.react(thread, root.ts, "eyes");
    await outbound.react(thread, root.ts, "eyes");
    expect(slack.store.reactionsBy(root, "U0BOT")).toEqual(["eyes"]);
    await outbound.unreact(thread, root.ts, "eyes");
    await outbound.unreact(thread, root.ts, "eyes");
    expect(slack.store.reactionsBy(root, "U0BOT")).toEqual([]);
    expect(slack.callsOf("reactions.add").map((call) => call.outcome)).toEqual(["ok", "already_reacted"]);
  });

  it("rejects other failures with the method, code, workspace and channel", async () => {
    const { outbound, thread } = await setup();
    const error = await outbound.edit(thread, "1.000000", "x").catch((err: unknown) => err);
    expect(error).toBeInstanceOf(SlackApiError);
    expect(error).toMatchObject({
      method: "chat.update",
      code: "message_not_found",
      team: "T0FAKE",
      channel: "C1",
    });
  });

  it("waits out a 429 (Retry-After) and delivers the edit", async () => {
    const { outbound, thread } = await setup({ streaming: false });
    const { id } = await outbound.post(thread, "draft");
    slack.failNext("chat.update", { status: 429, retryAfterSeconds: 1 });
    await outbound.edit(thread, id, "final");
    expect(slack.callsOf("chat.update").map((call) => call.outcome)).toEqual(["ratelimited", "ok"]);
    expect(slack.store.get("C1", id)?.text).toBe("final");
  });

  it("sets the thinking status, and stops asking where the workspace does not allow it", async () => {
    const { outbound, thread } = await setup({ assistantStatus: false });
    await outbound.setStatus(thread, "is thinking…");
    await outbound.endRun(thread);
    expect(slack.callsOf("assistant.threads.setStatus")).toHaveLength(1);
  });

  it("posts an approval card with buttons and edits it to the decision without them", async () => {
    const { outbound, thread } = await setup();
    const card: ApprovalCard = {
      approvalId: "3-abc",
      toolName: "deploy",
      argumentsText: "service: <api>",
      approvers: ["Alice", "<@U0CAROL>"],
      requesterName: "Alice",
      expiresAt: Date.UTC(2030, 0, 1),
      state: { kind: "pending", waitingMessages: 0 },
    };
    const { id } = await outbound.postApproval(thread, card);
    const message = slack.store.get("C1", id)!;
    const rows = (message.blocks as SlackBlock[]).filter((block) => block.type === "actions");
    expect(
      rows.map((row) =>
        row.elements?.map((element) => [element.action_id, element.text.text, element.style]),
      ),
    ).toEqual([
      [
        ["threadline:approve:3-abc", "Approve", "primary"],
        ["threadline:deny:3-abc", "Deny", "danger"],
        ["threadline:always:3-abc", "Always allow deploy for Alice in this thread", undefined],
        ["threadline:edit:3-abc", "Edit and approve…", undefined],
        ["threadline:reason:3-abc", "Deny with reason…", undefined],
      ],
      [["threadline:alwaysThread:3-abc", "Always allow deploy for everyone here (approvers)", undefined]],
    ]);
    // The wider grant asks again before it is sent.
    expect(rows[1]?.elements?.[0]?.confirm).toMatchObject({
      title: { type: "plain_text", text: "Allow deploy for everyone?" },
      confirm: { type: "plain_text", text: "Allow for everyone" },
    });
    expect(message.text).toContain("service: &lt;api&gt;");
    await outbound.updateApproval(thread, id, {
      ...card,
      state: { kind: "denied", by: { id: "U0BOB", name: "Bob" }, at: Date.UTC(2030, 0, 1) },
    });
    expect(message.text).toContain("*Denied* by Bob");
    expect((message.blocks as { type: string }[]).some((block) => block.type === "actions")).toBe(false);
    await outbound.updateApproval(thread, id, {
      ...card,
      state: {
        kind: "approved",
        by: { id: "U0CAROL", name: "Carol" },
        at: Date.UTC(2030, 0, 1),
        always: true,
        scope: "thread",
      },
    });
    expect(message.text).toContain("*Always allowed* `deploy` for everyone in this thread — by Carol");
  });

  it("posts a card whose long tool and requester names still fit Slack's button and dialog limits", async () => {
    const { outbound, thread } = await setup();
    const { id } = await outbound.postApproval(thread, {
      approvalId: "x".repeat(200),
      toolName: `deploy_${"t".repeat(200)}`,
      argumentsText: "a".repeat(5000),
      approvers: ["r".repeat(120), "<@U0CAROL>"],
      requesterName: `Requester ${"r".repeat(120)}`,
      expiresAt: Date.UTC(2030, 0, 1),
      state: { kind: "pending", waitingMessages: 0 },
    });
    const message = slack.store.get("C1", id)!;
    const labels = (message.blocks as SlackBlock[])
      .flatMap((block) => block.elements ?? [])
      .map((element) => element.text.text);
    expect(labels.slice(-4)).toEqual([
      expect.stringMatching(/^Always allow deploy_t+… for Requester r+… in this thread$/),
      "Edit and approve…",
      "Deny with reason…",
      expect.stringMatching(/^Always allow deploy_t+… for everyone here \(approvers\)$/),
    ]);
  });

  it("sends private notices as ephemeral messages in the thread", async () => {
    const { outbound, thread } = await setup();
    await outbound.notify(thread, "U0BOB", "not for you");
    expect(slack.store.ephemerals).toEqual([
      { channel: "C1", user: "U0BOB", text: "not for you", threadTs: thread.thread },
    ]);
  });
});
