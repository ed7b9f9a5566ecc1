import { afterEach, describe, expect, it } from "vitest";
import type { ToolResultMessage } from "../../src/agent/index.js";
import type { ApprovalCard } from "../../src/chat/index.js";
import { alice, bob, carol, type HarnessOptions, instantTool, RunsHarness } from "./harness.js";

let h: RunsHarness;
afterEach(async () => {
  await h?.close();
});

function toolResults(messages: { role: string }[]): ToolResultMessage[] {
  return messages.filter((m): m is ToolResultMessage => m.role === "toolResult");
}

/** Starts a run whose first response calls `deploy` (approval "ask") and waits for the card. */
async function askForDeploy(options: { config?: HarnessOptions["config"] } = {}) {
  const deploy = instantTool("deploy", "ask");
  h = await new RunsHarness({
    tools: [deploy.tool],
    config: { approvers: [bob.id], ...options.config },
    script: [
      { toolCalls: [{ id: "d1", name: "deploy", arguments: { value: "prod" } }] },
      { text: "deployed (or not)" },
      { toolCalls: [{ id: "d2", name: "deploy", arguments: { value: "staging" } }] },
      { text: "second done" },
    ],
  }).start();
  const thread = h.thread();
  const runId = await h.mention(thread, "deploy it", alice);
  await h.chat.waitFor((chat) => chat.ops.some((op) => op.op === "postApproval"));
  const card = h.chat.ops.find((op) => op.op === "postApproval")!.card as ApprovalCard;
  return { deploy, thread, runId, card };
}

function finalCard(approvalId: string): ApprovalCard | undefined {
  return h.chat.ops.filter((op) => op.op === "updateApproval" && op.card?.approvalId === approvalId).at(-1)
    ?.card;
}

describe("approvals", () => {
  it("shows a card with the tool, readable arguments, approvers and expiry, and runs the tool once approved", async () => {
    const { deploy, thread, runId, card } = await askForDeploy();
    expect(card).toMatchObject({ toolName: "deploy", state: { kind: "pending" } });
    expect(card.argumentsText).toContain("prod");
    // In the outbound's dialect (MemoryOutbound speaks Markdown: `@id`; Slack and Discord `<@id>`).
    expect(card.approvers).toEqual(["Alice", `@${bob.id}`]);
    expect(card.expiresAt).toBeGreaterThan(Date.now());
    expect(deploy.calls).toEqual([]);
    expect(await h.intake.decide(thread, card.approvalId, alice, "approve")).toEqual({
      kind: "accepted",
      status: "approved",
    });
    await h.runFinished(runId);
    expect(deploy.calls).toEqual([{ value: "prod" }]);
    expect(toolResults(h.model.requests[1]!.messages)[0]).toMatchObject({
      isError: false,
      toolName: "deploy",
    });
    expect(finalCard(card.approvalId)?.state).toMatchObject({ kind: "approved", by: alice, always: false });
  });

  it("a denial reaches the model as an error result naming who denied it", async () => {
    const { deploy, thread, runId, card } = await askForDeploy();
    expect(await h.intake.decide(thread, card.approvalId, bob, "deny")).toMatchObject({ kind: "accepted" });
    await h.runFinished(runId);
    expect(deploy.calls).toEqual([]);
    const result = toolResults(h.model.requests[1]!.messages)[0]!;
    expect(result.isError).toBe(true);
    expect(result.content).toEqual([{ type: "text", text: "Tool call denied by Bob." }]);
    expect(finalCard(card.approvalId)?.state).toMatchObject({ kind: "denied", by: bob });
  });

  it("refuses users who may not decide, and the first valid click wins (double clicks change nothing)", async () => {
    const { deploy, thread, runId, card } = await askForDeploy();
    expect(await h.intake.decide(thread, card.approvalId, carol, "approve")).toEqual({ kind: "forbidden" });
    expect(await h.intake.decide(thread, card.approvalId, alice, "deny")).toMatchObject({ kind: "accepted" });
    expect(await h.intake.decide(thread, card.approvalId, alice, "approve")).toEqual({
      kind: "already",
      status: "denied",
      by: alice,
    });
    expect(await h.intake.decide(thread, "0-forged", alice, "approve")).toEqual({ kind: "unknown" });
    await h.runFinished(runId);
    expect(deploy.calls).toEqual([]);
  });

  it("'always allow' runs the call and later calls of that tool in the thread skip the card", async () => {
    const { deploy, thread, runId, card } = await askForDeploy();
    await h.intake.decide(thread, card.approvalId, alice, "always");
    await h.runFinished(runId);
    const second = await h.intake.submit(h.message(thread, "now staging", { mentionsBot: true }));
    await h.runFinished((second as { runId: string }).runId);
    expect(deploy.calls).toEqual([{ value: "prod" }, { value: "staging" }]);
    expect(h.chat.ops.filter((op) => op.op === "postApproval")).toHaveLength(1);
    expect(finalCard(card.approvalId)?.state).toMatchObject({ kind: "approved", always: true });
  });

  it("no decision before the timeout is a denial with reason 'approval timed out'; later clicks are refused", async () => {
    const { deploy, thread, runId, card } = await askForDeploy({ config: { approvalTimeoutMs: 200 } });
    await h.runFinished(runId);
    expect(deploy.calls).toEqual([]);
    const result = toolResults(h.model.requests[1]!.messages)[0]!;
    expect(result.content).toEqual([{ type: "text", text: "approval timed out" }]);
    expect(finalCard(card.approvalId)?.state.kind).toBe("expired");
    expect(await h.intake.decide(thread, card.approvalId, alice, "approve")).toMatchObject({
      kind: "already",
      status: "expired",
    });
  });

  it("a stop during the approval wait cancels it: the card says so and the call ends aborted", async () => {
    const { deploy, thread, runId, card } = await askForDeploy();
    await h.intake.stop(thread, alice);
    await h.runFinished(runId);
    expect(deploy.calls).toEqual([]);
    expect(finalCard(card.approvalId)?.state.kind).toBe("cancelled");
    const transcript = await h.transcript(thread);
    const result = toolResults(transcript as { role: string }[])[0]!;
    expect(result.content).toEqual([{ type: "text", text: "Operation aborted" }]);
    expect(h.model.requests).toHaveLength(1);
    expect(await h.intake.decide(thread, card.approvalId, alice, "approve")).toMatchObject({
      kind: "already",
    });
  });

  it("replies while a card waits are queued and delivered after the batch settles", async () => {
    const { thread, runId, card } = await askForDeploy();
    const reply = h.message(thread, "careful with prod");
    expect((await h.intake.submit(reply)).kind).toBe("queued");
    await h.intake.decide(thread, card.approvalId, alice, "approve");
    await h.runFinished(runId);
    const roles = h.model.requests[1]!.messages.map((m) => m.role);
    expect(roles).toEqual(["user", "assistant", "toolResult", "user"]);
  });
});
