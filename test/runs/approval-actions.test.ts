import { afterEach, describe, expect, it } from "vitest";
import type { ToolResultMessage } from "../../src/agent/index.js";
import type { ApprovalCard } from "../../src/chat/index.js";
import { threadId } from "../../src/chat/index.js";
import { createGateway } from "../../src/runs/index.js";
import { alice, bob, carol, type HarnessOptions, instantTool, RunsHarness } from "./harness.js";

let h: RunsHarness;
afterEach(async () => {
  await h?.close();
});

function toolResults(messages: { role: string }[]): ToolResultMessage[] {
  return messages.filter((m): m is ToolResultMessage => m.role === "toolResult");
}

function cards(): ApprovalCard[] {
  return h.chat.ops.filter((op) => op.op === "postApproval").map((op) => op.card as ApprovalCard);
}

function finalCard(approvalId: string): ApprovalCard | undefined {
  return h.chat.ops.filter((op) => op.op === "updateApproval" && op.card?.approvalId === approvalId).at(-1)
    ?.card;
}

/** A run whose first response calls `deploy_service` (approval "ask"); resolves once the card is up. */
async function askForDeploy(options: Partial<HarnessOptions> = {}) {
  const deploy = instantTool("deploy_service", "ask");
  h = await new RunsHarness({
    tools: [deploy.tool],
    script: [
      { toolCalls: [{ id: "d1", name: "deploy_service", arguments: { value: "prod" } }] },
      { text: "done" },
    ],
    ...options,
    config: { approvers: [bob.id], ...options.config },
  }).start();
  const thread = h.thread();
  const runId = await h.mention(thread, "deploy it", alice);
  await h.chat.waitFor(() => cards().length > 0);
  return { deploy, thread, runId, card: cards()[0]! };
}

describe("a text reply while a card waits", () => {
  it("is queued as usual and its author is told privately that the card still waits", async () => {
    const { thread, runId, card } = await askForDeploy();
    const gateway = createGateway({ intake: h.intake, outbound: h.chat, config: h.config });
    const reply = h.message(thread, "approve it please", { author: carol });
    await gateway.message(reply);

    expect(await h.intake.messageState(thread, reply.id)).toBe("queued");
    const notices = h.chat.ops.filter((op) => op.op === "notify");
    expect(notices).toEqual([
      expect.objectContaining({
        userId: carol.id,
        text: "Still waiting for Approve/Deny on `deploy_service`; your message will be read after it.",
      }),
    ]);
    // The reply decided nothing: the card is still pending until a button is used.
    expect((await h.store.approvalRecord(threadId(thread), card.approvalId)).status).toBe("pending");

    await h.intake.decide(thread, card.approvalId, alice, "approve");
    await h.runFinished(runId);
    expect(toolResults(h.model.requests[1]!.messages)).toHaveLength(1);
    expect(h.model.requests[1]!.messages.map((m) => m.role)).toEqual([
      "user",
      "assistant",
      "toolResult",
      "user",
    ]);
  });

  it("no notice once the card was decided (the pending entry is cleared by the decision)", async () => {
    const { thread, card } = await askForDeploy({
      script: [
        { toolCalls: [{ id: "d1", name: "deploy_service", arguments: { value: "prod" } }] },
        // The next answer takes a while, so the run is still active when the reply below is queued.
        { text: "done", delayMs: 500 },
        { text: "you're welcome" },
      ],
    });
    await h.intake.decide(thread, card.approvalId, alice, "deny");
    const gateway = createGateway({ intake: h.intake, outbound: h.chat, config: h.config });
    const reply = h.message(thread, "thanks", { author: carol });
    await gateway.message(reply);
    expect(await h.intake.messageState(thread, reply.id)).toBe("queued");
    expect(h.chat.ops.filter((op) => op.op === "notify")).toEqual([]);
  });
});
