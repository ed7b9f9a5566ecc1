import { afterEach, describe, expect, it } from "vitest";
import type { ToolResultMessage } from "../../src/agent/index.js";
import { type ApprovalCard, threadId } from "../../src/chat/index.js";
import { createGateway, eventsChannel, STOP_IDLE_TEXT, STOP_REFUSED_TEXT } from "../../src/runs/index.js";
import { callKey } from "../../src/runs/recovery.js";
import { ThreadScripts } from "../../src/runs/thread-scripts.js";
import { MemoryOutbound } from "../fakes/memory-outbound.js";
import { connect, serversOf } from "../support/redis.js";
import { alice, bob, carol, gatedTool, instantTool, RunsHarness } from "./harness.js";

/**
 * Issue 12's seams, in one process against a real Redis: each test names the item it proves and fails on
 * the code before the fix.
 */

let h: RunsHarness;
afterEach(async () => {
  await h?.close();
});

const results = (messages: { role: string }[]) =>
  messages.filter((m): m is ToolResultMessage => m.role === "toolResult");
const resultText = (m: ToolResultMessage) => m.content.map((b) => (b.type === "text" ? b.text : "")).join("");

describe("item 6: tool-call ids repeat across responses", () => {
  it("a resumed run never hands a call the result recorded for an earlier call with the same id", async () => {
    const transfer = instantTool("transfer");
    h = await new RunsHarness({
      workers: 0,
      tools: [instantTool("lookup").tool, transfer.tool],
      script: [{ text: "Transferred." }],
    }).start();
    const thread = h.thread();
    const id = threadId(thread);
    const runId = await h.mention(thread, "check my balance, then move 50 EUR");
    // A worker ran turn 1 (lookup, id call_0), persisted turn 2 (transfer, id call_0 again: servers such as
    // Kimi/Moonshot reuse ids) and died before the transfer started.
    const dead = connect();
    const scripts = new ThreadScripts(dead, h.prefix);
    const start = await scripts.start(id, { run: runId, leaseMs: 200, steeringMode: "one" });
    if (start.kind !== "ok") throw new Error("expected a claim");
    const token = start.token;
    await scripts.ack(id, { token, msgId: start.prompts[0]!.id, retention: 0 });
    const call = (name: string) => ({ type: "toolCall", id: "call_0", name, arguments: {} });
    const assistant = (name: string) => ({
      role: "assistant",
      content: [call(name)],
      stopReason: "toolUse",
      usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2, cost: { total: 0 } },
    });
    const lookupResult = { content: [{ type: "text", text: "balance is 100 EUR" }], details: {} };
    await scripts.append(id, { token, retention: 0 }, [JSON.stringify(assistant("lookup"))]);
    await scripts.recordCall(id, {
      token,
      callKey: callKey(1, "call_0"), // what the worker writes for the call at transcript position 1
      record: JSON.stringify({ status: "done", result: lookupResult, isError: false }),
      onlyIfAbsent: 0,
      retention: 0,
    });
    const toolResult = {
      role: "toolResult",
      toolCallId: "call_0",
      toolName: "lookup",
      content: lookupResult.content,
      isError: false,
    };
    await scripts.append(id, { token, retention: 0 }, [
      JSON.stringify(toolResult),
      JSON.stringify(assistant("transfer")),
    ]);
    dead.disconnect();

    await h.addWorker(); // the job is still waiting: the next worker resumes after the dead one's lease
    await h.runFinished(runId);
    expect(transfer.calls).toHaveLength(1);
    const transcript = await h.transcript(thread);
    expect(results(transcript as { role: string }[]).map((r) => [r.toolName, resultText(r)])).toEqual([
      ["lookup", "balance is 100 EUR"],
      ["transfer", "transfer ok"],
    ]);
  });
});

describe("item 7: approvals never cross threads", () => {
  it("approving one thread's card leaves the other thread's identical request pending", async () => {
    const deploy = instantTool("deploy", "ask");
    h = await new RunsHarness({
      tools: [deploy.tool],
      script: [
        { toolCalls: [{ id: "call_0", name: "deploy", arguments: { value: "a" } }] },
        { toolCalls: [{ id: "call_0", name: "deploy", arguments: { value: "b" } }] },
        { text: "done" },
        { text: "done" },
      ],
    }).start();
    const one = h.thread("one");
    const two = h.thread("two");
    const runOne = await h.mention(one, "deploy a");
    await h.chat.waitFor((chat) => chat.ops.filter((op) => op.op === "postApproval").length === 1);
    const runTwo = await h.mention(two, "deploy b", bob);
    await h.chat.waitFor((chat) => chat.ops.filter((op) => op.op === "postApproval").length === 2);
    const [cardOne, cardTwo] = h.chat.ops
      .filter((op) => op.op === "postApproval")
      .map((op) => op.card as ApprovalCard);
    // Same transcript position, same tool-call id: the ids still differ, and say nothing about positions.
    expect(cardOne!.approvalId).not.toBe(cardTwo!.approvalId);
    expect(cardOne!.approvalId).not.toMatch(/^\d+-/);
    // A click carrying the other thread's id decides nothing in this thread.
    expect(await h.intake.decide(one, cardTwo!.approvalId, bob, "approve")).toEqual({ kind: "unknown" });
    // A forged event for thread two's waiter, published with thread one's id, is not a verdict either: the
    // waiter reads its own record.
    await h.redis.publish(
      eventsChannel(h.prefix),
      JSON.stringify({
        type: "approval",
        approvalId: cardTwo!.approvalId,
        threadId: threadId(two),
        status: "approved",
      }),
    );
    expect(await h.intake.decide(one, cardOne!.approvalId, alice, "approve")).toMatchObject({
      kind: "accepted",
    });
    await h.runFinished(runOne);
    expect(deploy.calls).toEqual([{ value: "a" }]);
    expect(await h.redis.hget(h.keys(two).approval(cardTwo!.approvalId), "status")).toBe("pending");
    expect(await h.intake.decide(two, cardTwo!.approvalId, bob, "deny")).toMatchObject({ kind: "accepted" });
    await h.runFinished(runTwo);
    expect(deploy.calls).toEqual([{ value: "a" }]);
  });
});

describe("item 8: who may stop, and what 'Always allow' covers", () => {
  function gatewayOf() {
    const chat = new MemoryOutbound();
    return { chat, gateway: createGateway({ intake: h.intake, outbound: chat, config: h.config }) };
  }

  it("a stop reply from someone else changes nothing and tells them privately; the requester's stops", async () => {
    const slow = gatedTool("slow");
    h = await new RunsHarness({
      tools: [slow.tool],
      script: [{ toolCalls: [{ id: "s1", name: "slow", arguments: {} }] }, { text: "never" }],
    }).start();
    const { chat, gateway } = gatewayOf();
    const thread = h.thread();
    const runId = await h.mention(thread, "work slowly");
    await slow.nextStart();
    await gateway.message(h.message(thread, "stop", { author: carol }));
    expect(chat.ops.filter((op) => op.op === "notify")).toMatchObject([
      { userId: carol.id, text: STOP_REFUSED_TEXT },
    ]);
    expect(await h.isActive(thread)).toBe(true);
    await gateway.reaction({
      thread,
      messageId: "m-any",
      user: carol,
      emoji: h.config.reactions.stop,
      added: true,
    });
    expect(chat.ops.filter((op) => op.op === "notify")).toHaveLength(2);
    expect(await h.isActive(thread)).toBe(true);
    await gateway.message(h.message(thread, "Stop!", { author: alice }));
    await h.runFinished(runId);
    expect(h.model.requests).toHaveLength(1);
  });

  it("a stop word in an idle thread starts nothing and says so privately", async () => {
    h = await new RunsHarness({ script: [{ text: "hi" }] }).start();
    const { chat, gateway } = gatewayOf();
    const thread = h.thread();
    await h.runFinished(await h.mention(thread, "hello"));
    await gateway.message(h.message(thread, "please stop"));
    expect(chat.ops.filter((op) => op.op === "notify")).toMatchObject([
      { userId: alice.id, text: STOP_IDLE_TEXT },
    ]);
    expect(await h.isActive(thread)).toBe(false);
    expect(await h.userTexts(thread)).toEqual(["Alice: hello"]);
  });

  it("'always' allows the tool for the requester only; an approver may allow it for everyone", async () => {
    const deploy = instantTool("deploy", "ask");
    const call = (id: string) => ({ toolCalls: [{ id, name: "deploy", arguments: {} }] });
    h = await new RunsHarness({
      tools: [deploy.tool],
      config: { approvers: [carol.id] },
      script: [
        call("a"),
        { text: "1" },
        call("b"),
        { text: "2" },
        call("c"),
        { text: "3" },
        call("d"),
        { text: "4" },
      ],
    }).start();
    const thread = h.thread();
    const cards = () =>
      h.chat.ops.filter((op) => op.op === "postApproval").map((op) => op.card as ApprovalCard);
    const run1 = await h.mention(thread, "deploy", alice);
    await h.chat.waitFor(() => cards().length === 1);
    expect(await h.intake.decide(thread, cards()[0]!.approvalId, alice, "always")).toMatchObject({
      status: "always",
    });
    await h.runFinished(run1);
    await h.runFinished(await h.mention(thread, "again", alice)); // Alice: no card
    expect(cards()).toHaveLength(1);
    const run3 = await h.mention(thread, "me too", bob); // Bob: asked again
    await h.chat.waitFor(() => cards().length === 2);
    // Only approvers may allow a tool for everyone.
    expect(await h.intake.decide(thread, cards()[1]!.approvalId, bob, "alwaysThread")).toEqual({
      kind: "forbidden",
    });
    expect(await h.intake.decide(thread, cards()[1]!.approvalId, carol, "alwaysThread")).toMatchObject({
      status: "alwaysThread",
    });
    await h.runFinished(run3);
    await h.runFinished(await h.mention(thread, "and me", carol));
    expect(cards()).toHaveLength(2);
    expect(deploy.calls).toHaveLength(4);
  });
});

describe("item 11: retention", () => {
  it("every key of a one-message thread expires, the transcript included", async () => {
    h = await new RunsHarness({ script: [{ text: "hi" }] }).start();
    const thread = h.thread();
    await h.runFinished(await h.mention(thread, "hello"));
    const keys = h.keys(thread);
    for (const key of [keys.meta, keys.transcript, keys.state, keys.body, keys.disposition, keys.origin]) {
      const ttl = await h.redis.pttl(key);
      expect({ key, expires: ttl > 0 }).toEqual({ key, expires: true });
    }
  });
});

describe("item 12: a failure a retry recovers from", () => {
  it("never tells the user it failed; only the last attempt does", async () => {
    let builds = 0;
    h = await new RunsHarness({
      script: [{ text: "all good" }],
      agent: {
        tools: () => {
          builds++;
          if (builds === 1) throw new Error("Connection is closed.");
          return [];
        },
      },
    }).start();
    const thread = h.thread();
    const runId = await h.mention(thread, "hello");
    await h.runFinished(runId);
    const texts = h.chat.texts(thread).join("\n");
    expect(texts).toContain("all good");
    expect(texts).not.toContain("Something went wrong");
  });
});

describe("item 13: what a finished run waits for", () => {
  it("the job returns without waiting long for the final chat update, and no heartbeat follows the release", async () => {
    const warnings: string[] = [];
    h = await new RunsHarness({
      script: [{ text: "answer" }],
      config: { finishTimeoutMs: 50, leaseMs: 90 },
      log: { info() {}, error() {}, warn: (_fields, message) => warnings.push(message) },
    }).start();
    const thread = h.thread();
    const runId = await h.mention(thread, "hello");
    await h.chat.waitFor((chat) => chat.ops.some((op) => op.op === "post"));
    h.chat.pause(); // the platform stops answering (a rate limit): the final edit hangs
    await h.runFinished(runId);
    await new Promise((resolve) => setTimeout(resolve, 200)); // a few lease periods
    h.chat.resume();
    expect(warnings).not.toContain("lost the thread lease; stopping this run");
    expect(warnings).toContain("final chat update still pending; the job returns without it");
  });
});

describe("item 3: control signals are state, pub/sub is only the fast path", () => {
  async function killSubscriber(): Promise<void> {
    const name = `${eventsChannel(h.prefix)}:bus`;
    // On a cluster the subscriber sits on one of the primaries: look on each.
    for (const server of serversOf(h.redis)) {
      const clients = (await server.client("LIST")) as string;
      const line = clients.split("\n").find((entry) => entry.includes(` name=${name} `));
      if (line) return void (await server.client("KILL", "ID", /\bid=(\d+)/.exec(line)![1]!));
    }
    throw new Error("the worker's subscriber is not connected");
  }

  // Both run on the single server and on the cluster (`npm run test:cluster`): on a cluster the bus subscribes
  // on one node with a connection of its own, so a dropped subscriber is noticed there too (it was a known gap
  // while the bus used the Cluster client's subscriber, which replaces a dropped connection silently).

  it("a stop published while the worker's subscriber reconnects still stops the run", async () => {
    const slow = gatedTool("slow");
    h = await new RunsHarness({
      tools: [slow.tool],
      script: [{ toolCalls: [{ id: "s1", name: "slow", arguments: {} }] }, { text: "never" }],
      config: { leaseMs: 60_000 }, // no heartbeat during the test: the reconnect alone must catch it
    }).start();
    const thread = h.thread();
    const runId = await h.mention(thread, "work");
    await slow.nextStart();
    await killSubscriber();
    expect(await h.intake.stop(thread, alice)).toEqual({ kind: "stopping", runId });
    await h.runFinished(runId);
    expect(h.model.requests).toHaveLength(1);
  });

  it("an approval decided while the subscriber reconnects is seen without waiting for the timeout", async () => {
    const deploy = instantTool("deploy", "ask");
    h = await new RunsHarness({
      tools: [deploy.tool],
      script: [{ toolCalls: [{ id: "d1", name: "deploy", arguments: {} }] }, { text: "deployed" }],
      config: { leaseMs: 60_000 },
    }).start();
    const thread = h.thread();
    const runId = await h.mention(thread, "deploy");
    await h.chat.waitFor((chat) => chat.ops.some((op) => op.op === "postApproval"));
    const card = h.chat.ops.find((op) => op.op === "postApproval")!.card as ApprovalCard;
    await killSubscriber();
    expect(await h.intake.decide(thread, card.approvalId, alice, "approve")).toMatchObject({
      kind: "accepted",
    });
    await h.runFinished(runId);
    expect(deploy.calls).toHaveLength(1);
  });

  it("a pending approval is re-read on every heartbeat, too", async () => {
    const deploy = instantTool("deploy", "ask");
    h = await new RunsHarness({
      tools: [deploy.tool],
      script: [{ toolCalls: [{ id: "d1", name: "deploy", arguments: {} }] }, { text: "deployed" }],
      config: { leaseMs: 300 },
    }).start();
    const thread = h.thread();
    const runId = await h.mention(thread, "deploy");
    await h.chat.waitFor((chat) => chat.ops.some((op) => op.op === "postApproval"));
    const card = h.chat.ops.find((op) => op.op === "postApproval")!.card as ApprovalCard;
    // Decided behind the bus's back (as if the event was lost): only the record changes.
    const key = h.keys(thread).approval(card.approvalId);
    await h.redis.hset(key, "status", "approved", "decidedBy", JSON.stringify(alice));
    await h.runFinished(runId);
    expect(deploy.calls).toHaveLength(1);
  });
});

describe("item 4: a claim that lost its lease starts no tool", () => {
  it("a takeover fences the old claim: its tool never starts and its writes are refused", async () => {
    const note = instantTool("note");
    h = await new RunsHarness({ workers: 0, tools: [note.tool], script: [{ text: "resumed" }] }).start();
    const thread = h.thread();
    const id = threadId(thread);
    const runId = await h.mention(thread, "note this");
    const scripts = new ThreadScripts(h.redis, h.prefix);
    const first = await scripts.start(id, { run: runId, leaseMs: 30_000, steeringMode: "one" });
    const second = await scripts.start(id, { run: runId, leaseMs: 30_000, steeringMode: "one" });
    if (first.kind !== "ok" || second.kind !== "ok") throw new Error("expected two claims");
    expect(first.token).not.toBe(second.token);
    // The first claim is paused; the second took over. Everything the first tries is refused.
    expect(await scripts.heartbeat(id, { token: first.token, leaseMs: 30_000 })).toEqual({ kind: "lost" });
    expect(await scripts.append(id, { token: first.token, retention: 0 }, ["{}"])).toEqual({ kind: "lost" });
    expect(
      await scripts.recordCall(id, {
        token: first.token,
        callKey: "1:x",
        record: "{}",
        onlyIfAbsent: 1,
        retention: 0,
      }),
    ).toEqual({ kind: "lost" });
    expect(await scripts.drain(id, { token: first.token, disposition: "steer", mode: "all" })).toEqual({
      kind: "lost",
    });
    expect(await scripts.release(id, { token: first.token, mode: "natural", now: 0, retention: 0 })).toEqual({
      kind: "lost",
    });
    expect(await scripts.heartbeat(id, { token: second.token, leaseMs: 30_000 })).toEqual({
      kind: "ok",
      stopBy: "",
      waiting: { kind: undefined, by: "" },
    });
  });
});

describe("item 17: a lease that lapses with nobody taking over", () => {
  it("the run is retried and resumes, instead of leaving its queued messages to nobody", async () => {
    const slow = gatedTool("slow");
    h = await new RunsHarness({
      tools: [slow.tool],
      script: [{ toolCalls: [{ id: "s1", name: "slow", arguments: {} }] }, { text: "reply read" }],
      config: { leaseMs: 60_000 },
    }).start();
    const thread = h.thread();
    const runId = await h.mention(thread, "work");
    await slow.nextStart();
    const reply = h.message(thread, "and then this");
    expect(await h.intake.submit(reply)).toMatchObject({ kind: "queued", runId });
    // The worker stalled past its lease (a long event-loop block): the lease is gone, nobody took over.
    await h.redis.del(h.keys(thread).lease);
    slow.release();
    await h.runFinished(runId);
    await h.quiescent([thread]);
    expect(await h.intake.messageState(thread, reply.id)).toBe("delivered");

    expect(h.chat.texts(thread).join("\n")).toContain("reply read");
    // The next request carried the reply (after the interrupted call's result).
    expect(JSON.stringify(h.model.requests[1]!.messages)).toContain("Alice: and then this");
  });
});

describe("item 17: queue marks within the platforms' reaction budgets", () => {
  const marksOf = (messageId: string) =>
    h.chat.ops
      .filter((op) => op.messageId === messageId && (op.op === "react" || op.op === "unreact"))
      .map((op) => `${op.op} ${op.emoji}`);

  it("a delivered or not-processed message gets its new mark first and loses only the mark it wore", async () => {
    const slow = gatedTool("slow");
    h = await new RunsHarness({
      tools: [slow.tool],
      script: [
        { toolCalls: [{ id: "s1", name: "slow", arguments: {} }] },
        { toolCalls: [{ id: "s2", name: "slow", arguments: {} }] },
        { text: "never" },
      ],
    }).start();
    const thread = h.thread();
    const runId = await h.mention(thread, "work");
    await slow.nextStart();
    const steer = h.message(thread, "steer this");
    const later = h.message(thread, "later");
    await h.intake.submit(steer);
    await h.intake.submit(later);
    await h.intake.setDisposition(thread, later.id, "followUp");
    slow.release(); // the steer is delivered with the first tool's result
    await slow.nextStart();
    expect(await h.intake.stop(thread, alice)).toMatchObject({ kind: "stopping" });
    await h.runFinished(runId);
    const { reactions } = h.config;
    await h.chat.waitFor(() => marksOf(later.id).length === 2);
    expect(marksOf(steer.id)).toEqual([`react ${reactions.delivered}`, `unreact ${reactions.steer}`]);
    expect(marksOf(later.id)).toEqual([`react ${reactions.notProcessed}`, `unreact ${reactions.followUp}`]);
  });
});
