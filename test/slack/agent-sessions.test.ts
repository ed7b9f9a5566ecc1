import { afterAll, afterEach, describe, expect, it } from "vitest";
import type { ApprovalCard, ThreadRef } from "../../src/chat/index.js";
import { slackKeys } from "../../src/runs/index.js";
import { AgentSessions } from "../../src/slack/agent-sessions.js";
import { createSlackClient, SlackApi } from "../../src/slack/api.js";
import { createRedisRateLimiter, memoryRecipientStore, SlackOutbound } from "../../src/slack/index.js";
import type { MethodBudget } from "../../src/slack/rate-limit.js";
import { type FakeSlackOptions, FakeSlackServer } from "../fakes/slack-server.js";
import { connect, deletePrefix, requireRedis, uniquePrefix } from "../support/redis.js";

/**
 * `agents.sessions.setStatus` is Tier 3 (50 calls a minute per workspace, shared by every worker) and a
 * run moves its session two to four times, so past about 25 new runs a minute the budget queues. These
 * tests shrink the budget to make that happen with two runs, against the real Redis-backed limiter.
 */
const redis = connect();
const prefix = uniquePrefix("agent-sessions");
let slack: FakeSlackServer;
afterEach(async () => {
  await slack?.close();
});
afterAll(async () => {
  await deletePrefix(redis, prefix);
  redis.disconnect();
});

const SILENT = { info: () => {}, warn: () => {}, error: () => {}, debug: () => {} };
const FAST_RETRY = { retries: 2, factor: 1, minTimeout: 10, maxTimeout: 20 };

async function setup(sessionBudget: MethodBudget, options: FakeSlackOptions = {}) {
  await requireRedis(redis);
  slack = await FakeSlackServer.start(options);
  const recipients = memoryRecipientStore();
  const limiter = createRedisRateLimiter({
    redis,
    keyPrefix: slackKeys(uniquePrefix(prefix)).rateLimit,
    budgets: { "agents.sessions.setStatus": sessionBudget },
  });
  const api = new SlackApi(
    createSlackClient({ token: slack.config.botToken, apiUrl: slack.apiUrl, retry: FAST_RETRY }),
    limiter,
  );
  const outbound = new SlackOutbound({ api, recipients });
  const sessions = new AgentSessions({ api, log: SILENT });
  const thread = async (text: string) => {
    const root = slack.post({ user: "U0ALICE", channel: "C1", text });
    const ref: ThreadRef = {
      platform: "slack",
      workspace: slack.config.teamId,
      channel: "C1",
      thread: root.ts,
    };
    await recipients.set(ref, "U0ALICE");
    await recipients.setTitle(ref, text);
    return { root, ref };
  };
  /** The statuses each thread's `agents.sessions.setStatus` calls asked for, with a title when given. */
  const sessionCalls = (ref: ThreadRef) =>
    slack
      .callsOf("agents.sessions.setStatus")
      .filter((call) => call.args.thread_ts === ref.thread)
      .map((call) =>
        call.args.title === undefined ? call.args.status : `${call.args.status} "${call.args.title}"`,
      );
  return { outbound, sessions, thread, sessionCalls };
}

const card: ApprovalCard = {
  approvalId: "a1",
  toolName: "deploy",
  argumentsText: "{}",
  approvers: [],
  requesterName: "Alice",
  expiresAt: Date.UTC(2030, 0, 1),
  state: { kind: "pending", waitingMessages: 0 },
};
const approved: ApprovalCard = {
  ...card,
  state: { kind: "approved", by: { id: "U0ALICE", name: "Alice" }, at: Date.UTC(2030, 0, 1), always: false },
};

describe("agent sessions under their Tier 3 budget", () => {
  it("an answer never waits for the session budget: a second run in the same minute streams, stops and ends", async () => {
    // One call a minute: the first run's `processing` spends it; everything after would wait ~61 s.
    const { outbound, thread, sessionCalls } = await setup({ limit: 1, windowMs: 60_000 });
    const first = await thread("first question");
    await outbound.setStatus(first.ref, "is thinking…");
    await outbound.post(first.ref, "First answer.");
    await outbound.endRun(first.ref);

    const second = await thread("second question");
    await outbound.setStatus(second.ref, "is thinking…");
    const { id } = await outbound.post(second.ref, "Second answer.");
    await outbound.edit(second.ref, id, "Second answer. In full.");
    await outbound.endRun(second.ref);

    const message = slack.store.get("C1", id)!;
    expect(message.text).toBe("Second answer. In full.");
    expect(message.streaming).toBe(false);
    // The feedback buttons went in with the stop (they wait for nothing either).
    const stop = slack.callsOf("chat.stopStream").find((call) => call.args.ts === id);
    expect(stop?.args.session_status).toBe("active");
    expect(JSON.stringify(stop?.args.blocks)).toContain("threadline:feedback");
    expect(sessionCalls(first.ref)).toEqual([`processing "first question"`]);
    // The second run ended before its first call could go out: it sends nothing (its stop set it active).
    expect(sessionCalls(second.ref)).toEqual([]);
  });

  it("sends only the newest status once the budget allows, and the run's end after it", async () => {
    // One call per (1 s + the limiter's 1 s margin) window.
    const { outbound, thread, sessionCalls } = await setup({ limit: 1, windowMs: 1000 });
    const { ref } = await thread("deploy it");
    await outbound.setStatus(ref, "is thinking…");
    // Three changes while the window is used up: suspended → processing → suspended.
    const posted = await outbound.postApproval(ref, card);
    await outbound.updateApproval(ref, posted.id, approved);
    await outbound.postApproval(ref, card);
    await outbound.settled();
    expect(sessionCalls(ref)).toEqual([`processing "deploy it"`, "suspended"]);
    await outbound.endRun(ref);
    await outbound.settled();
    expect(sessionCalls(ref)).toEqual([`processing "deploy it"`, "suspended", "active"]);
    expect(slack.store.session("C1", ref.thread)?.status).toBe("active");
  });

  it("a new run in the same thread while the last run's `active` waits sends the newest status only", async () => {
    const { outbound, thread, sessionCalls } = await setup({ limit: 1, windowMs: 1000 });
    const { ref } = await thread("two runs");
    await outbound.setStatus(ref, "is thinking…");
    await outbound.post(ref, "One.");
    await outbound.endRun(ref); // `active` waits for the next window …
    await outbound.setStatus(ref, "is thinking…"); // … and the next run wants `processing` again
    await outbound.settled();
    // Slack saw `processing` and nothing else was due: the session never flickered to `active` and back.
    expect(sessionCalls(ref)).toEqual([`processing "two runs"`]);
    await outbound.post(ref, "Two.");
    await outbound.endRun(ref);
    await outbound.settled();
    expect(sessionCalls(ref)).toEqual([`processing "two runs"`, "active"]);
  });

  it("a workspace without agent sessions is asked once, and its runs go on without them", async () => {
    const { outbound, thread } = await setup({ limit: 50, windowMs: 60_000 }, { agentSessions: false });
    for (const text of ["one", "two"]) {
      const { ref } = await thread(text);
      await outbound.setStatus(ref, "is thinking…");
      const { id } = await outbound.post(ref, `Answer ${text}.`);
      await outbound.postApproval(ref, card);
      await outbound.endRun(ref);
      await outbound.settled();
      expect(slack.store.get("C1", id)?.streaming).toBe(false);
    }
    expect(slack.callsOf("agents.sessions.setStatus").map((call) => call.outcome)).toEqual([
      "unknown_method",
    ]);
  });

  it("a workspace that loses agent sessions mid-run forgets every thread's session, not only the failing one's", async () => {
    const { sessions, thread, sessionCalls } = await setup({ limit: 50, windowMs: 60_000 });
    const [a, b] = [await thread("a"), await thread("b")];
    sessions.set(a.ref, "processing");
    sessions.set(b.ref, "processing");
    await sessions.settled();
    expect([sessionCalls(a.ref), sessionCalls(b.ref)]).toEqual([["processing"], ["processing"]]);
    expect(sessions.size).toBe(2);
    // The app's agent features are turned off while both runs go on: A's next call learns it.
    slack.failNext("agents.sessions.setStatus", { error: "not_allowed" });
    sessions.set(a.ref, "suspended");
    await sessions.settled();
    // B's run is still going and never moves its session again: its entry must not stay behind.
    expect(sessions.size).toBe(0);
    sessions.set(b.ref, "active", true);
    await sessions.settled();
    expect(sessionCalls(b.ref)).toEqual(["processing"]);
    expect(sessions.size).toBe(0);
  });
});
