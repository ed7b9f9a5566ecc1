import { describe, expect, it } from "vitest";
import { type ApprovalCard, MARKDOWN_DIALECT, type ThreadRef, threadId } from "../../src/chat/index.js";
import { MemoryOutbound, MemoryOutboundError } from "./memory-outbound.js";

const thread: ThreadRef = { platform: "playground", workspace: "local", channel: "general", thread: "t1" };
const other: ThreadRef = { ...thread, thread: "t2" };
const key = threadId(thread);

const card: ApprovalCard = {
  approvalId: "a1",
  toolName: "shell",
  argumentsText: "command: ls",
  approvers: ["Ada"],
  requesterName: "Ada",
  expiresAt: 600_000,
  state: { kind: "pending", waitingMessages: 0 },
};

describe("MemoryOutbound", () => {
  it("records every operation in call order and keeps messages per thread", async () => {
    const chat = new MemoryOutbound();
    const { id } = await chat.post(thread, "hello");
    await chat.edit(thread, id, "hello world");
    await chat.react(thread, id, "eyes");
    await chat.react(thread, "user-1", "compass");
    await chat.unreact(thread, "user-1", "compass");
    await chat.setStatus(thread, "is thinking…");
    const approval = await chat.postApproval(thread, card);
    await chat.updateApproval(thread, approval.id, { ...card, state: { kind: "expired", at: 600_000 } });
    await chat.notify(thread, "U2", "not allowed");
    await chat.post(other, "elsewhere");
    await chat.delete(thread, id);
    await chat.setStatus(thread, null);

    expect(chat.ops).toEqual([
      { op: "post", thread: key, text: "hello", messageId: "m1" },
      { op: "edit", thread: key, messageId: "m1", text: "hello world" },
      { op: "react", thread: key, messageId: "m1", emoji: "eyes" },
      { op: "react", thread: key, messageId: "user-1", emoji: "compass" },
      { op: "unreact", thread: key, messageId: "user-1", emoji: "compass" },
      { op: "setStatus", thread: key, status: "is thinking…" },
      { op: "postApproval", thread: key, card, messageId: "m2" },
      {
        op: "updateApproval",
        thread: key,
        messageId: "m2",
        card: { ...card, state: { kind: "expired", at: 600_000 } },
      },
      { op: "notify", thread: key, userId: "U2", text: "not allowed" },
      { op: "post", thread: threadId(other), text: "elsewhere", messageId: "m3" },
      { op: "delete", thread: key, messageId: "m1" },
      { op: "setStatus", thread: key, status: null },
    ]);
    expect(chat.messages(thread).map((message) => [message.id, message.kind, message.deleted])).toEqual([
      ["m1", "text", true],
      ["user-1", "external", false],
      ["m2", "approval", false],
    ]);
    expect(chat.message("m1")).toMatchObject({ text: "hello world", edits: 1, reactions: new Set(["eyes"]) });
    expect(chat.message("user-1")?.reactions).toEqual(new Set());
    expect(chat.message("m2")?.text).toContain("approval timed out");
    expect(chat.texts(thread)).toEqual([]);
    expect(chat.texts(other)).toEqual(["elsewhere"]);
    expect(chat.status(thread)).toBeNull();
    expect(chat.opsFor(other)).toHaveLength(1);
    expect(chat.counts).toMatchObject({ post: 2, edit: 1, react: 2, setStatus: 2 });
  });

  it("keeps a copy of approval cards, so later mutation by the caller does not leak in", async () => {
    const chat = new MemoryOutbound();
    const mutable = structuredClone(card);
    const { id } = await chat.postApproval(thread, mutable);
    mutable.toolName = "changed";
    expect(chat.message(id)?.card?.toolName).toBe("shell");
    expect(chat.ops[0]?.card?.toolName).toBe("shell");
  });

  it("rejects like a platform and records the failed call", async () => {
    const chat = new MemoryOutbound({ limits: { maxMessageChars: 10 } });
    await expect(chat.post(thread, "  ")).rejects.toMatchObject({ code: "no_text", operation: "post" });
    await expect(chat.post(thread, "x".repeat(11))).rejects.toMatchObject({ code: "msg_too_long" });
    await expect(chat.edit(thread, "nope", "x")).rejects.toMatchObject({ code: "message_not_found" });
    await chat.react(thread, "user-1", "eyes");
    await expect(chat.edit(thread, "user-1", "x")).rejects.toMatchObject({ code: "cant_update_message" });
    const { id } = await chat.post(thread, "ok");
    await expect(chat.edit(other, id, "x")).rejects.toMatchObject({ code: "message_not_found" });
    await chat.delete(thread, id);
    await expect(chat.edit(thread, id, "again")).rejects.toBeInstanceOf(MemoryOutboundError);
    expect(chat.ops.map((op) => [op.op, op.error === undefined ? "ok" : "failed"])).toEqual([
      ["post", "failed"],
      ["post", "failed"],
      ["edit", "failed"],
      ["react", "ok"],
      ["edit", "failed"],
      ["post", "ok"],
      ["edit", "failed"],
      ["delete", "ok"],
      ["edit", "failed"],
    ]);
    expect(chat.ops[1]?.error).toContain("msg_too_long (11 > 10)");
  });

  it("fails the next N calls of one operation, then recovers", async () => {
    const chat = new MemoryOutbound();
    const { id } = await chat.post(thread, "a");
    chat.failNext("edit", 2);
    await expect(chat.edit(thread, id, "b")).rejects.toMatchObject({ code: "injected_failure" });
    await chat.post(thread, "other operations still work");
    await expect(chat.edit(thread, id, "c")).rejects.toMatchObject({ code: "injected_failure" });
    await chat.edit(thread, id, "d");
    expect(chat.message(id)?.text).toBe("d");
    chat.failNext("react", 1, new Error("rate_limited"));
    await expect(chat.react(thread, id, "eyes")).rejects.toThrow("rate_limited");
    expect(chat.message(id)?.reactions.size).toBe(0);
    expect(chat.ops.filter((op) => op.error !== undefined).map((op) => `${op.op}:${op.error}`)).toEqual([
      "edit:edit failed in playground:local:general:t1: injected_failure",
      "edit:edit failed in playground:local:general:t1: injected_failure",
      "react:rate_limited",
    ]);
  });

  it("holds calls while paused and applies them in order when released", async () => {
    const chat = new MemoryOutbound();
    chat.pause();
    const first = chat.post(thread, "one");
    const second = chat.post(thread, "two");
    expect(chat.ops).toEqual([]);
    expect(chat.waiting).toBe(2);
    expect(chat.release()).toBe(1);
    await expect(first).resolves.toEqual({ id: "m1" });
    expect(chat.texts(thread)).toEqual(["one"]);
    chat.resume();
    await expect(second).resolves.toEqual({ id: "m2" });
    expect(chat.waiting).toBe(0);
    await chat.post(thread, "three");
    expect(chat.texts(thread)).toEqual(["one", "two", "three"]);
  });

  it("tracks how many calls on one message were in flight at once", async () => {
    const chat = new MemoryOutbound();
    const { id } = await chat.post(thread, "a");
    await chat.edit(thread, id, "b");
    await chat.edit(thread, id, "c");
    expect(chat.maxInFlightPerMessage).toBe(1);
    chat.pause();
    const edits = [chat.edit(thread, id, "d"), chat.react(thread, id, "eyes")];
    chat.resume();
    await Promise.all(edits);
    expect(chat.maxInFlightPerMessage).toBe(2);
  });

  it("resolves waitFor as soon as an operation makes the predicate true, without polling", async () => {
    const chat = new MemoryOutbound();
    let resolved = false;
    const waiting = chat
      .waitFor((c) => c.texts(thread).includes("done"))
      .then(() => {
        resolved = true;
      });
    await chat.post(thread, "working");
    await Promise.resolve();
    expect(resolved).toBe(false);
    await chat.post(thread, "done");
    await waiting;
    expect(resolved).toBe(true);
    await chat.waitFor((c) => c.counts.post === 2);
  });

  it("notifies subscribers of every call and counts without keeping ops when recording is off", async () => {
    const chat = new MemoryOutbound({ recordOps: false, idPrefix: "x" });
    const seen: string[] = [];
    const unsubscribe = chat.subscribe((op) => seen.push(`${op.op}:${op.messageId ?? ""}`));
    const { id } = await chat.post(thread, "a");
    await chat.edit(thread, id, "b");
    unsubscribe();
    await chat.edit(thread, id, "c");
    expect(id).toBe("x1");
    expect(seen).toEqual(["post:x1", "edit:x1"]);
    expect(chat.ops).toEqual([]);
    expect(chat.counts.edit).toBe(2);
    expect(chat.limits).toEqual({ maxMessageChars: 4000, minEditIntervalMs: 0 });
    expect(chat.dialect).toBe(MARKDOWN_DIALECT);
  });
});
