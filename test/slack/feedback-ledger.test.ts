import { afterAll, describe, expect, it } from "vitest";
import { slackKeys } from "../../src/runs/index.js";
import { type FeedbackClick, FeedbackRecorder, type SlackFeedback } from "../../src/slack/answer-feedback.js";
import { feedbackBlock } from "../../src/slack/feedback-blocks.js";
import { memoryFeedbackLedger, redisFeedbackLedger } from "../../src/slack/index.js";
import { connect, deletePrefix, requireRedis, uniquePrefix } from "../support/redis.js";

const redis = connect();
const prefix = uniquePrefix("feedback-ledger");
afterAll(async () => {
  await deletePrefix(redis, prefix);
  redis.disconnect();
});

const quiet = () => {};
const log = { info: quiet, warn: quiet, error: quiet, debug: quiet };
const blockId = String(feedbackBlock("run-1", "1700000000.000200").block_id);
const click = (userId: string, value: "positive" | "negative"): FeedbackClick => ({
  team: "T1",
  channel: "C1",
  threadTs: "1700000000.000100",
  messageTs: "1700000000.000200",
  userId,
  action: { value, block_id: blockId },
});

describe("feedback clicks across gateways", () => {
  it("a user's repeated click is skipped whichever gateway receives it; a changed mind is recorded", async () => {
    await requireRedis(redis);
    const recorded: string[] = [];
    const onFeedback = (gateway: string) => (feedback: SlackFeedback) =>
      recorded.push(`${gateway}: ${feedback.userId} ${feedback.value} (${feedback.runId})`);
    // Two gateway processes: Slack delivers each interaction to one of them.
    const key = slackKeys(prefix).feedback;
    const a = new FeedbackRecorder(log, onFeedback("a"), redisFeedbackLedger(redis, key));
    const b = new FeedbackRecorder(log, onFeedback("b"), redisFeedbackLedger(redis, key));
    expect(await a.record(click("U_ALICE", "positive"))).toBe(true);
    expect(await b.record(click("U_ALICE", "positive"))).toBe(false);
    expect(await b.record(click("U_BOB", "positive"))).toBe(true);
    expect(await b.record(click("U_ALICE", "negative"))).toBe(true);
    expect(await a.record(click("U_ALICE", "negative"))).toBe(false);
    // Two gateways receiving the same click at once record it once (the swap is one atomic command).
    const both = await Promise.all([
      a.record(click("U_CAROL", "negative")),
      b.record(click("U_CAROL", "negative")),
    ]);
    expect(both.filter(Boolean)).toHaveLength(1);
    expect(recorded.filter((line) => !line.includes("U_CAROL"))).toEqual([
      "a: U_ALICE positive (run-1)",
      "b: U_BOB positive (run-1)",
      "b: U_ALICE negative (run-1)",
    ]);
    // Kept a day, not for good.
    const ttl = await redis.pttl(`${key}:T1:C1:1700000000.000200:U_ALICE`);
    expect(ttl).toBeGreaterThan(23 * 60 * 60 * 1000);
    expect(ttl).toBeLessThanOrEqual(24 * 60 * 60 * 1000);
  });

  it("records the click when Redis does not answer (a possible repeat beats a lost vote)", async () => {
    const recorded: string[] = [];
    const broken = { swap: () => Promise.reject(new Error("Connection is closed.")) };
    const recorder = new FeedbackRecorder(log, (f) => recorded.push(f.value), broken);
    expect(await recorder.record(click("U_ALICE", "positive"))).toBe(true);
    expect(recorded).toEqual(["positive"]);
  });

  it("the in-process ledger still skips a repeat within one gateway", async () => {
    const recorder = new FeedbackRecorder(log, undefined, memoryFeedbackLedger());
    expect(await recorder.record(click("U_ALICE", "positive"))).toBe(true);
    expect(await recorder.record(click("U_ALICE", "positive"))).toBe(false);
  });
});
