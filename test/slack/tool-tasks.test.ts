import { afterEach, describe, expect, it } from "vitest";
import { type ApprovalCard, watchApprovals } from "../../src/chat/index.js";
import { events as e } from "../chat/events.js";
import type { FakeSlackServer } from "../fakes/slack-server.js";
import { startSlackRenderer } from "../support/slack-renderer.js";

let slack: FakeSlackServer;
afterEach(async () => {
  await slack?.close();
});

const stats = { turns: 2, toolCalls: 1, inputTokens: 10, outputTokens: 5 };

/** The renderer on the real Slack outbound (one run's `watchApprovals` wrapper) against the fake Slack. */
async function setup() {
  const started = await startSlackRenderer({ text: "deploy it", wrap: watchApprovals, footer: false });
  slack = started.slack;
  const task = (id: string) => started.bot()[0]?.tasks?.get(id);
  return { ...started, task };
}

const card = (state: ApprovalCard["state"]): ApprovalCard => ({
  approvalId: "a1",
  toolName: "deploy",
  argumentsText: '{ "service": "api" }',
  approvers: ["Alice"],
  requesterName: "Alice",
  expiresAt: Date.now() + 600_000,
  state,
});

describe("tool calls in Slack's native streams", () => {
  it("are task_update chunks between the text: running with the tool's own progress, then complete", async () => {
    const { renderer, errors, bot, task } = await setup();
    renderer.handle(e.turnStart());
    renderer.handle(e.assistantStart());
    renderer.handle(e.text("Checking the deploy."));
    renderer.handle(e.assistantEnd("toolUse"));
    renderer.handle(e.toolStart("t1", "deploy"));
    await slack.store.waitFor("a running task", () => task("t1")?.status === "in_progress");
    renderer.handle(e.toolUpdate("t1", "deploy", `step 2 of 3: ${"rolling out ".repeat(40)}`));
    const details = await slack.store.waitFor("the tool's progress", () => task("t1")?.details as string);
    expect(details.startsWith("step 2 of 3: rolling out")).toBe(true);
    expect([...details].length).toBeLessThanOrEqual(256);
    renderer.handle(e.toolEnd("t1", "deploy", { durationMs: 1500 }));
    renderer.handle(e.turnStart());
    renderer.handle(e.assistantStart());
    renderer.handle(e.text("Deployed."));
    renderer.handle(e.assistantEnd());
    await renderer.finish({ kind: "completed" }, stats);

    expect(errors).toEqual([]);
    const [reply, ...others] = bot();
    expect(others).toEqual([]);
    expect(reply?.streamed).toBe(true);
    expect(reply?.text).toBe("Checking the deploy.\nDeployed.");
    expect(task("t1")).toMatchObject({ title: "deploy", status: "complete" });
    // In stream order: the text, the task's states, then the text after it.
    const chunks = ["chat.startStream", "chat.appendStream"]
      .flatMap((method) => slack.callsOf(method))
      .sort((a, b) => a.hrAt - b.hrAt)
      .flatMap((call) => (call.args.chunks as Record<string, unknown>[] | undefined) ?? [])
      .map((chunk) => (chunk.type === "task_update" ? `task:${chunk.status}` : `text:${chunk.text}`));
    expect(chunks.filter((chunk) => chunk !== "text: ")).toEqual([
      "text:Checking the deploy.",
      "task:in_progress",
      "task:in_progress",
      "task:complete",
      "text:\nDeployed.",
    ]);
    expect(slack.callsOf("chat.startStream")[0]?.args.task_display_mode).toBe("timeline");
  });

  it("puts the answer after an approval below the card, and the status says whose approval it waits for", async () => {
    const { outbound, thread, root, renderer, errors, bot } = await setup();
    renderer.handle(e.turnStart());
    renderer.handle(e.assistantStart());
    renderer.handle(e.text("Deploying now."));
    renderer.handle(e.assistantEnd("toolUse"));
    renderer.handle(e.toolStart("t1", "deploy"));
    await slack.store.waitFor("the reply", () => bot()[0]?.tasks?.has("t1"));
    const posted = await outbound.postApproval(thread, card({ kind: "pending", waitingMessages: 0 }));
    await slack.store.waitFor("the waiting status", () =>
      slack.store.statuses.some((s) => s.status === "is waiting for Alice's approval"),
    );
    const approved = card({
      kind: "approved",
      by: { id: "U0ALICE", name: "Alice" },
      at: Date.now(),
      always: false,
    });
    await outbound.updateApproval(thread, posted.id, approved);
    renderer.handle(e.toolEnd("t1", "deploy", { durationMs: 1000 }));
    renderer.handle(e.turnStart());
    renderer.handle(e.assistantStart());
    renderer.handle(e.text("Deployed, all green."));
    renderer.handle(e.assistantEnd());
    await renderer.finish({ kind: "completed" }, stats);

    expect(errors).toEqual([]);
    const inThread = slack.store
      .thread("C1", root.ts)
      .filter((message) => message.ts !== root.ts && !message.deleted)
      .map((message) => (message.ts === posted.id ? "[card]" : message.text));
    expect(inThread).toEqual(["Deploying now.\n\n🔧 deploy ✓ 1.0s", "[card]", "Deployed, all green."]);
    const statuses = slack.store.statuses.map((s) => s.status).filter((s, i, all) => s !== all[i - 1]);
    expect(statuses).toEqual([
      "is thinking…",
      "is running deploy…",
      "is waiting for Alice's approval",
      "is running deploy…",
      "is thinking…",
      "",
    ]);
  });
});
