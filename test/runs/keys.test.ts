import { describe, expect, it } from "vitest";
import { threadId } from "../../src/chat/index.js";
import { discordRestBudgetPrefix, slackKeys } from "../../src/runs/index.js";
import {
  eventsChannel,
  pendingStartsKey,
  playgroundKeys,
  queuePrefix,
  spendKey,
  threadKeys,
} from "../../src/runs/keys.js";

// Every key holds data written by earlier releases: their strings must not change.
const slackThread = {
  platform: "slack",
  workspace: "T1",
  channel: "C1",
  thread: "1700000000.000100",
} as const;

describe("run keys", () => {
  it("puts every key of a thread under <prefix>:{<thread id>}", () => {
    const keys = threadKeys("tl", "slack:T1:C1:1.2");
    const { approval, replies, ...plain } = keys;
    expect(plain).toEqual({
      meta: "tl:{slack:T1:C1:1.2}:meta",
      lease: "tl:{slack:T1:C1:1.2}:lease",
      transcript: "tl:{slack:T1:C1:1.2}:transcript",
      inbox: "tl:{slack:T1:C1:1.2}:inbox",
      inflight: "tl:{slack:T1:C1:1.2}:inflight",
      state: "tl:{slack:T1:C1:1.2}:state",
      disposition: "tl:{slack:T1:C1:1.2}:disposition",
      body: "tl:{slack:T1:C1:1.2}:body",
      origin: "tl:{slack:T1:C1:1.2}:origin",
      allow: "tl:{slack:T1:C1:1.2}:allow",
      calls: "tl:{slack:T1:C1:1.2}:calls",
      approvals: "tl:{slack:T1:C1:1.2}:approvals",
      pending: "tl:{slack:T1:C1:1.2}:pending",
    });
    expect(approval("a1")).toBe("tl:{slack:T1:C1:1.2}:approval:a1");
    expect(replies("r1")).toBe("tl:{slack:T1:C1:1.2}:replies:r1");
  });

  it("builds the spend counters, the pending starts, the events channel and BullMQ's prefix", () => {
    expect(spendKey("tl", "thread", "slack:T1:C1:1.2", "2026-01-02")).toBe(
      "tl:{slack:T1:C1:1.2}:spend:2026-01-02",
    );
    expect(spendKey("tl", "user", "U1", "2026-01-02")).toBe("tl:spend:2026-01-02:user:U1");
    expect(pendingStartsKey("tl")).toBe("tl:starts");
    expect(eventsChannel("tl")).toBe("tl:events");
    expect(queuePrefix("tl")).toBe("{tl:bull}");
  });
});

describe("adapter keys", () => {
  it("builds Slack's recipient and session title keys per team, channel and thread", () => {
    const keys = slackKeys("tl");
    expect(keys.recipient(slackThread)).toBe("tl:slack-recipient:T1:C1:1700000000.000100");
    expect(keys.title(slackThread)).toBe("tl:slack-title:T1:C1:1700000000.000100");
    expect(keys.rateLimit("chat.update")).toBe("tl:slack-rl:chat.update");
  });

  it("builds Slack's seen-message keys with the thread's hash tag, and the per-message thread key", () => {
    const keys = slackKeys("tl");
    expect(keys.seen(slackThread)).toEqual({
      list: "tl:{slack:T1:C1:1700000000.000100}:slack-seen",
      fetched: "tl:{slack:T1:C1:1700000000.000100}:slack-seen-fetched",
      meta: "tl:{slack:T1:C1:1700000000.000100}:slack-seen-meta",
    });
    // The same hash tag as the thread's run keys (one slot per thread on Redis Cluster).
    expect(keys.seen(slackThread).list.startsWith(`tl:{${threadId(slackThread)}}:`)).toBe(true);
    expect(keys.seenMessage("T1", "C1", "1700000000.000200")).toBe(
      "tl:slack-seen-msg:T1:C1:1700000000.000200",
    );
  });

  it("puts Discord's REST budget under <prefix>:discord:rest", () => {
    expect(discordRestBudgetPrefix("tl")).toBe("tl:discord:rest");
  });

  it("puts the playground's threads under <prefix>:playground, each thread's keys with the {pg:<thread>} tag", () => {
    const keys = playgroundKeys("tl");
    expect([keys.threads, keys.events]).toEqual(["tl:playground:threads", "tl:playground:events"]);
    expect(keys.thread("t1")).toEqual({
      messages: "tl:playground:{pg:t1}:messages",
      order: "tl:playground:{pg:t1}:order",
      reactions: "tl:playground:{pg:t1}:reactions",
      meta: "tl:playground:{pg:t1}:meta",
    });
  });
});
