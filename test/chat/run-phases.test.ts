import { describe, expect, it } from "vitest";
import type { AgentEvent } from "../../src/agent/index.js";
import {
  type ApprovalCard,
  type ChatOutbound,
  createRunRenderer,
  type PostedMessage,
  type ReplyPart,
  type RunStats,
  type ThreadRef,
  watchApprovals,
} from "../../src/chat/index.js";
import { MemoryOutbound } from "../fakes/memory-outbound.js";
import { events as e } from "./events.js";
import { ManualClock, settle } from "./manual-clock.js";

const thread: ThreadRef = { platform: "slack", workspace: "T1", channel: "C1", thread: "1700000000.000100" };
const stats: RunStats = { turns: 2, toolCalls: 1, inputTokens: 10, outputTokens: 5 };

/** A memory outbound that takes tool tasks and keeps the parts of each message's last post or edit. */
class TaskOutbound extends MemoryOutbound {
  readonly toolTasks = true;
  readonly parts = new Map<string, ReplyPart[] | undefined>();

  override async post(ref: ThreadRef, text: string, parts?: ReplyPart[]): Promise<PostedMessage> {
    const posted = await super.post(ref, text);
    this.parts.set(posted.id, parts);
    return posted;
  }

  override async edit(ref: ThreadRef, messageId: string, text: string, parts?: ReplyPart[]): Promise<void> {
    await super.edit(ref, messageId, text);
    this.parts.set(messageId, parts);
  }
}

function card(state: ApprovalCard["state"]): ApprovalCard {
  return {
    approvalId: "a1",
    toolName: "deploy",
    argumentsText: "{}",
    approvers: ["Alice"],
    requesterName: "Alice",
    expiresAt: 0,
    state,
  };
}

function setup(chat: MemoryOutbound = new MemoryOutbound({ limits: { minEditIntervalMs: 1000 } })) {
  const outbound: ChatOutbound = watchApprovals(chat);
  const clock = new ManualClock();
  const renderer = createRunRenderer({ outbound, thread, footer: false, clock });
  const feed = async (...list: AgentEvent[]) => {
    for (const event of list) renderer.handle(event);
    await settle();
    await clock.advance(1000);
  };
  const finish = async () => {
    const done = renderer.finish({ kind: "completed" }, stats);
    await clock.advance(10_000);
    await done;
  };
  const statuses = () =>
    chat.ops
      .filter((op) => op.op === "setStatus" || op.op === "endRun")
      .map((op) => (op.op === "endRun" ? "(run ended)" : op.status));
  return { chat, outbound, feed, finish, statuses };
}

describe("the run renderer's phases", () => {
  it("shows a running tool's onUpdate text on its progress line, and drops it when the tool ends", async () => {
    const { chat, feed, finish } = setup();
    await feed(e.turnStart(), e.assistantStart(), e.assistantEnd("toolUse"), e.toolStart("t1", "fetch"));
    await feed(e.toolUpdate("t1", "fetch", "downloaded 40 of 100 MB\nmore detail"));
    expect(chat.texts(thread)).toEqual(["🔧 fetch … downloaded 40 of 100 MB"]);
    await feed(e.toolEnd("t1", "fetch", { durationMs: 2000 }));
    await finish();
    expect(chat.texts(thread)).toEqual(["🔧 fetch ✓ 2.0s"]);
  });

  it("says what happens: thinking, running a tool, waiting for the requester's approval, thinking again", async () => {
    const { outbound, feed, finish, statuses } = setup();
    await feed(e.turnStart(), e.assistantStart(), e.text("Deploying."), e.assistantEnd("toolUse"));
    await feed(e.toolStart("t1", "deploy"));
    const posted = await outbound.postApproval(thread, card({ kind: "pending", waitingMessages: 0 }));
    await feed();
    const at = Date.now();
    await outbound.updateApproval(
      thread,
      posted.id,
      card({ kind: "approved", by: { id: "U1", name: "Alice" }, at, always: false }),
    );
    await feed(e.toolEnd("t1", "deploy", { durationMs: 1000 }), e.turnStart(), e.assistantStart());
    await finish();
    expect(statuses()).toEqual([
      "is thinking…",
      "is running deploy…",
      "is waiting for Alice's approval",
      "is running deploy…",
      "is thinking…",
      "(run ended)",
    ]);
  });

  it("puts the text that follows an approval card below the card; the tool's line above still completes", async () => {
    const { chat, outbound, feed, finish } = setup();
    await feed(e.turnStart(), e.assistantStart(), e.text("Deploying now."), e.assistantEnd("toolUse"));
    await feed(e.toolStart("t1", "deploy"));
    const posted = await outbound.postApproval(thread, card({ kind: "pending", waitingMessages: 0 }));
    await feed();
    const at = Date.now();
    await outbound.updateApproval(
      thread,
      posted.id,
      card({ kind: "approved", by: { id: "U1", name: "Alice" }, at, always: false }),
    );
    await feed(e.toolEnd("t1", "deploy", { durationMs: 1000 }));
    await feed(e.turnStart(), e.assistantStart(), e.text("Deployed, all green."), e.assistantEnd());
    await finish();
    const shown = chat.messages(thread).filter((message) => !message.deleted);
    expect(shown.map((message) => [message.kind, message.text])).toEqual([
      ["text", "Deploying now.\n\n🔧 deploy ✓ 1.0s"],
      ["approval", expect.stringContaining("deploy")],
      ["text", "Deployed, all green."],
    ]);
  });

  it("gives an outbound that takes tool tasks each call as a task: pending for its approval, running, done or failed", async () => {
    const chat = new TaskOutbound({ limits: { minEditIntervalMs: 1000 } });
    const { outbound, feed, finish } = setup(chat);
    const tasksOf = (id: string) =>
      (chat.parts.get(id) ?? []).flatMap((part) => (part.kind === "task" ? [part.task] : []));
    await feed(e.turnStart(), e.assistantStart(), e.text("Checking."), e.assistantEnd("toolUse"));
    await feed(e.toolStart("t1", "deploy"), e.toolStart("t2", "lint"));
    await outbound.postApproval(thread, card({ kind: "pending", waitingMessages: 0 }));
    await feed(e.toolUpdate("t2", "lint", "3 of 9 files"));
    const first = chat.messages(thread)[0]!.id;
    expect(tasksOf(first)).toEqual([
      { id: "t1", title: "deploy", status: "pending", details: "waiting for Alice's approval" },
      { id: "t2", title: "lint", status: "in_progress", details: "3 of 9 files" },
    ]);
    expect(chat.parts.get(first)?.[0]).toEqual({ kind: "text", text: "Checking.\n\n" });
    await feed(
      e.toolEnd("t2", "lint", { error: "x".repeat(400) }),
      e.toolEnd("t1", "deploy", { durationMs: 1500 }),
    );
    await finish();
    const [deploy, lint] = tasksOf(first);
    expect(deploy).toEqual({ id: "t1", title: "deploy", status: "complete", details: "✓ 1.5s" });
    expect(lint?.status).toBe("error");
    expect([...(lint?.output ?? "")].length).toBeLessThanOrEqual(256);
    // The text of the same message still carries the progress lines (for outbounds that show text).
    expect(chat.message(first)?.text).toContain("🔧 deploy ✓ 1.5s");
  });
});
