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
    // Accepted for the run (on a loaded machine the worker may already have drained it), never refused.
    expect(["queued", "inflight", "delivered"]).toContain(await h.intake.messageState(thread, reply.id));
    expect(h.chat.ops.filter((op) => op.op === "notify")).toEqual([]);
  });
});

describe("several approvals in one batch", () => {
  it("each gets its card at once and resolves independently: approve one, deny the other", async () => {
    const deploy = instantTool("deploy_service", "ask");
    const drop = instantTool("drop_table", "ask");
    h = await new RunsHarness({
      tools: [deploy.tool, drop.tool],
      config: { approvers: [bob.id] },
      script: [
        {
          toolCalls: [
            { id: "c1", name: "deploy_service", arguments: { value: "prod" } },
            { id: "c2", name: "drop_table", arguments: { value: "users" } },
          ],
        },
        { text: "one deployed, one refused" },
      ],
    }).start();
    const thread = h.thread();
    const runId = await h.mention(thread, "deploy and drop", alice);
    // Both cards are up before anyone decides anything.
    await h.chat.waitFor(() => cards().length === 2);
    const [deployCard, dropCard] = cards();
    expect([deployCard!.toolName, dropCard!.toolName]).toEqual(["deploy_service", "drop_table"]);
    expect(deployCard!.approvalId).not.toBe(dropCard!.approvalId);
    const pending = await h.redis.hvals(h.keys(thread).pending);
    expect(pending.sort()).toEqual(["deploy_service", "drop_table"]);

    // The second card is decided first; the first one still waits.
    await h.intake.decide(thread, dropCard!.approvalId, bob, "deny");
    await h.chat.waitFor(() => finalCard(dropCard!.approvalId) !== undefined);
    expect(finalCard(dropCard!.approvalId)?.state).toMatchObject({ kind: "denied", by: bob });
    expect((await h.store.approvalRecord(threadId(thread), deployCard!.approvalId)).status).toBe("pending");
    await h.intake.decide(thread, deployCard!.approvalId, alice, "approve");
    await h.runFinished(runId);

    expect(deploy.calls).toEqual([{ value: "prod" }]);
    expect(drop.calls).toEqual([]);
    const results = toolResults(h.model.requests[1]!.messages);
    expect(results.map((r) => [r.toolCallId, r.isError, r.content])).toEqual([
      ["c1", false, [{ type: "text", text: "deploy_service ok" }]],
      ["c2", true, [{ type: "text", text: "Tool call denied by Bob." }]],
    ]);
    expect(finalCard(deployCard!.approvalId)?.state).toMatchObject({ kind: "approved", by: alice });
  });

  it("a stop while the first card waits cancels both cards; neither tool runs", async () => {
    const deploy = instantTool("deploy_service", "ask");
    const drop = instantTool("drop_table", "ask");
    h = await new RunsHarness({
      tools: [deploy.tool, drop.tool],
      script: [
        {
          toolCalls: [
            { id: "c1", name: "deploy_service", arguments: { value: "prod" } },
            { id: "c2", name: "drop_table", arguments: { value: "users" } },
          ],
        },
      ],
    }).start();
    const thread = h.thread();
    const runId = await h.mention(thread, "deploy and drop", alice);
    await h.chat.waitFor(() => cards().length === 2);
    await h.intake.stop(thread, alice);
    await h.runFinished(runId);
    const [first, second] = cards();
    await h.chat.waitFor(() => finalCard(second!.approvalId) !== undefined);
    expect(finalCard(first!.approvalId)?.state).toEqual({
      kind: "cancelled",
      reason: "The run was stopped.",
    });
    expect(finalCard(second!.approvalId)?.state).toEqual({
      kind: "cancelled",
      reason: "The run was stopped.",
    });
    expect((await h.store.approvalRecord(threadId(thread), second!.approvalId)).status).toBe("cancelled");
    expect([...deploy.calls, ...drop.calls]).toEqual([]);
  });
});

describe("cards shown ahead for calls the loop never makes", () => {
  it("are withdrawn when the run ends: a call the loop guard refused leaves no card waiting", async () => {
    const deploy = instantTool("deploy_service", "ask");
    const drop = instantTool("drop_table", "ask");
    h = await new RunsHarness({
      tools: [deploy.tool, drop.tool],
      config: { loopGuard: { maxRepeats: 3, maxToolCallsPerTurn: 1, maxToolCallsPerRun: 100 } },
      script: [
        {
          toolCalls: [
            { id: "c1", name: "deploy_service", arguments: { value: "prod" } },
            { id: "c2", name: "drop_table", arguments: { value: "users" } },
          ],
        },
        { text: "only one call per turn, fine" },
      ],
    }).start();
    const thread = h.thread();
    const runId = await h.mention(thread, "deploy and drop", alice);
    await h.chat.waitFor(() => cards().length === 2);
    const [first, second] = cards();
    await h.intake.decide(thread, first!.approvalId, alice, "approve");
    await h.runFinished(runId);
    await h.chat.waitFor(() => finalCard(second!.approvalId) !== undefined);
    expect(finalCard(second!.approvalId)?.state).toEqual({
      kind: "cancelled",
      reason: "The call was not made.",
    });
    expect((await h.store.approvalRecord(threadId(thread), second!.approvalId)).status).toBe("cancelled");
    expect(deploy.calls).toEqual([{ value: "prod" }]);
    expect(drop.calls).toEqual([]);
  });
});

describe("reminder and per-tool timeouts", () => {
  const reminders = () =>
    h.chat.ops.filter((op) => op.op === "post" && op.text?.includes("is waiting for your approval"));

  it("mentions the requester once in the thread when nobody decided within approvalReminderMs", async () => {
    const { thread, runId, card } = await askForDeploy({ config: { approvalReminderMs: 50 } });
    await h.chat.waitFor(() => reminders().length > 0);
    expect(reminders()).toEqual([
      expect.objectContaining({
        text: `@${alice.name} \`deploy_service\` is waiting for your approval: use Approve or Deny on the card above.`,
      }),
    ]);
    const record = await h.store.approvalRecord(threadId(thread), card.approvalId);
    expect(record.remindedAt).toBeDefined();
    await h.intake.decide(thread, card.approvalId, alice, "approve");
    await h.runFinished(runId);
    expect(reminders()).toHaveLength(1);
  });

  it("a tool's own approvalTimeoutMs wins over the config's", async () => {
    const deploy = instantTool("deploy_service", "ask");
    const { runId } = await askForDeploy({
      tools: [{ ...deploy.tool, approvalTimeoutMs: 100 }],
      config: { approvalTimeoutMs: 60_000 },
    });
    await h.runFinished(runId);
    expect(deploy.calls).toEqual([]);
    expect(toolResults(h.model.requests[1]!.messages)[0]!.content).toEqual([
      { type: "text", text: "approval timed out" },
    ]);
  });

  it('"none": the card waits past the config timeout until someone decides', async () => {
    const deploy = instantTool("deploy_service", "ask");
    const { thread, runId, card } = await askForDeploy({
      tools: [{ ...deploy.tool, approvalTimeoutMs: "none" }],
      config: { approvalTimeoutMs: 50, approvalReminderMs: 0 },
    });
    expect(card.expiresAt).toBe(0);
    const key = h.keys(thread).approval(card.approvalId);
    expect(await h.redis.pttl(key)).toBe(-1);
    await new Promise((resolve) => setTimeout(resolve, 300)); // well past the config's 50 ms
    expect((await h.store.approvalRecord(threadId(thread), card.approvalId)).status).toBe("pending");
    expect(await h.intake.decide(thread, card.approvalId, alice, "approve")).toMatchObject({
      kind: "accepted",
    });
    await h.runFinished(runId);
    expect(deploy.calls).toEqual([{ value: "prod" }]);
    // Decided, the record is kept for the retention period (late clicks), no longer forever.
    expect(await h.redis.pttl(key)).toBeGreaterThan(0);
    expect(reminders()).toEqual([]);
  });
});

describe("deny with a reason", () => {
  it("the reason reaches the model in the error result; a click through the gateway carries it too", async () => {
    const { deploy, runId, thread, card } = await askForDeploy();
    const gateway = createGateway({ intake: h.intake, outbound: h.chat, config: h.config });
    expect(
      await gateway.button({
        thread,
        approvalId: card.approvalId,
        user: bob,
        decision: "deny",
        reason: "  wrong cluster, use staging  ",
      }),
    ).toEqual({ kind: "none" });
    await h.runFinished(runId);
    expect(deploy.calls).toEqual([]);
    const result = toolResults(h.model.requests[1]!.messages)[0]!;
    expect(result.isError).toBe(true);
    expect(result.content).toEqual([
      { type: "text", text: "Tool call denied by Bob: wrong cluster, use staging" },
    ]);
    expect(finalCard(card.approvalId)?.state).toMatchObject({
      kind: "denied",
      by: bob,
      reason: "wrong cluster, use staging",
    });
    expect(h.chat.messages(thread).find((m) => m.kind === "approval")?.text).toContain(
      "Reason: wrong cluster, use staging",
    );
  });

  it("a reason longer than 500 characters is cut to 500", async () => {
    const { runId, thread, card } = await askForDeploy();
    await h.intake.decide(thread, card.approvalId, bob, "deny", "x".repeat(700));
    await h.runFinished(runId);
    const text = (toolResults(h.model.requests[1]!.messages)[0]!.content[0] as { text: string }).text;
    expect(text).toBe(`Tool call denied by Bob: ${"x".repeat(499)}…`);
    const record = await h.store.approvalRecord(threadId(thread), card.approvalId);
    expect(record.reason).toHaveLength(500);
  });
});

describe("edit and approve", () => {
  it("an invalid edit decides nothing; a valid one runs the call with the edited arguments, which the model sees", async () => {
    const { deploy, runId, thread, card } = await askForDeploy();
    const gateway = createGateway({ intake: h.intake, outbound: h.chat, config: h.config });
    expect(await gateway.approvalForm!(thread, card.approvalId, bob)).toEqual({
      kind: "form",
      toolName: "deploy_service",
      argumentsJson: '{\n  "value": "prod"\n}',
    });
    const click = { thread, approvalId: card.approvalId, user: bob, decision: "approve" as const };
    expect(await gateway.button({ ...click, editedArguments: '{"value": ' })).toEqual({
      kind: "invalid",
      text: expect.stringMatching(/^Not valid JSON: /),
    });
    const wrongType = await gateway.button({ ...click, editedArguments: '{"value": {"cluster": 1}}' });
    expect(wrongType).toEqual({
      kind: "invalid",
      text: expect.stringContaining('Validation failed for tool "deploy_service":\n  - value:'),
    });
    expect((await h.store.approvalRecord(threadId(thread), card.approvalId)).status).toBe("pending");

    expect(await gateway.button({ ...click, editedArguments: '{"value": "staging"}' })).toEqual({
      kind: "none",
    });
    await h.runFinished(runId);
    expect(deploy.calls).toEqual([{ value: "staging" }]);
    const next = h.model.requests[1]!.messages;
    // The assistant's call keeps the model's arguments; the result says what actually ran.
    const call = next.find((m) => m.role === "assistant") as {
      content: { type: string; arguments?: unknown }[];
    };
    expect(call.content.find((b) => b.type === "toolCall")?.arguments).toEqual({ value: "prod" });
    expect(toolResults(next)[0]!.content).toEqual([
      {
        type: "text",
        text: 'Note: Bob edited the arguments before approving; the call ran with these arguments instead of yours:\n{"value":"staging"}',
      },
      { type: "text", text: "deploy_service ok" },
    ]);
    expect(finalCard(card.approvalId)?.state).toMatchObject({
      kind: "approved",
      by: bob,
      changes: ['value: "prod" → "staging"'],
    });
    const record = await h.store.approvalRecord(threadId(thread), card.approvalId);
    expect(JSON.parse(record.arguments!)).toEqual({ value: "prod" });
    expect(JSON.parse(record.editedArguments!)).toEqual({ value: "staging" });
  });

  it("the same permission rules as the buttons: no form and no edit for someone who may not decide", async () => {
    const { deploy, runId, thread, card } = await askForDeploy();
    const gateway = createGateway({ intake: h.intake, outbound: h.chat, config: h.config });
    const notAllowed = "You can't approve this: only the person who asked and the configured approvers can.";
    expect(await gateway.approvalForm!(thread, card.approvalId, carol)).toEqual({
      kind: "notice",
      text: notAllowed,
    });
    const click = { thread, approvalId: card.approvalId, user: carol, decision: "approve" as const };
    expect(await gateway.button({ ...click, editedArguments: '{"value": "x"}' })).toEqual({
      kind: "notice",
      text: notAllowed,
    });
    // A form for another thread (forged or outdated metadata) finds nothing there.
    const other = { ...thread, thread: `${thread.thread}-other` };
    expect(await gateway.approvalForm!(other, card.approvalId, bob)).toEqual({
      kind: "notice",
      text: "This approval is no longer pending.",
    });
    await gateway.button({ thread, approvalId: card.approvalId, user: alice, decision: "approve" });
    await h.runFinished(runId);
    expect(deploy.calls).toEqual([{ value: "prod" }]);
    expect(await gateway.approvalForm!(thread, card.approvalId, bob)).toEqual({
      kind: "notice",
      text: "This was already decided by Alice (approved).",
    });
  });
});
