import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ApprovalCard } from "../../src/chat/index.js";
import type { PlaygroundThread } from "../../src/playground/index.js";
import { textReply, toolCallReply } from "../fakes/openai-server.js";
import { toolResults } from "../support/model-requests.js";
import { PlaygroundE2E } from "../support/playground-e2e.js";

/**
 * The playground's approval forms end to end: `threadline start` (gateway and worker in one process, the
 * playground's own harness) with the `deploy` tool (approval "ask"), a fake chat-completions server, real
 * Redis. Deny with a reason, and edit and approve with an invalid edit first: what the HTTP API answers,
 * what the card shows, what the model reads next, what Redis holds.
 */
describe("playground: deny with a reason and edit and approve", () => {
  const ada = { id: "u-ada", name: "Ada" };
  const eve = { id: "u-eve", name: "Eve" };
  let e2e: PlaygroundE2E;

  beforeAll(async () => {
    e2e = await PlaygroundE2E.start("pg-forms");
  }, 90_000);

  afterAll(async () => {
    await e2e?.close();
  }, 30_000);

  const post = (path: string, body: unknown) => e2e.post(path, body);

  /** Starts a thread whose model asks to deploy `service`, then answers `answer`; resolves with its card. */
  async function askForDeploy(service: string, answer: string) {
    const first = `deploy ${service}`;
    e2e.openai.handler = (request) => {
      if (request.path !== "/chat/completions") return undefined;
      const messages = (request.body as { messages: { role: string; content: unknown }[] }).messages;
      if (!JSON.stringify(messages).includes(first)) return undefined;
      return messages.some((message) => message.role === "tool")
        ? textReply(answer)
        : toolCallReply([{ id: `call-${service}`, name: "deploy", arguments: { service } }]);
    };
    const { body } = await post("/api/threads", { user: ada, text: `@Threadline ${first}` });
    const thread = (body as { thread: PlaygroundThread }).thread;
    const card = await waitForCard(thread.id, (shown) => shown.state.kind === "pending");
    return { threadId: thread.id, card, path: `/api/threads/${thread.id}/approvals/${card.approvalId}` };
  }

  async function waitForCard(threadId: string, done: (card: ApprovalCard) => boolean): Promise<ApprovalCard> {
    let found: ApprovalCard | undefined;
    for (let i = 0; i < 300 && !found; i++) {
      found = (await e2e.snapshot(threadId)).messages
        .map((message) => message.card)
        .find((card) => card !== undefined && done(card));
      if (!found) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    if (!found) throw new Error("no such card");
    return found;
  }

  const finished = (threadId: string) => e2e.finished(threadId);
  const chatRequests = (service: string) =>
    e2e.openai.requests.filter(
      (request) =>
        request.path === "/chat/completions" && JSON.stringify(request.body).includes(`deploy ${service}`),
    );
  const record = (threadId: string, approvalId: string) =>
    e2e.redis.hgetall(e2e.keys(threadId).approval(approvalId));

  it("Deny with reason…: the reason is on the card, in Redis and in the tool result the model reads", async () => {
    const { threadId, card, path } = await askForDeploy("queue", "Not deploying queue.");
    expect((await post(path, { user: ada, decision: "deny", reason: "queue is frozen" })).body).toEqual({
      reply: { kind: "none" },
    });
    const denied = await waitForCard(threadId, (shown) => shown.state.kind === "denied");
    expect(denied.state).toMatchObject({ kind: "denied", by: ada, reason: "queue is frozen" });
    expect(await record(threadId, card.approvalId)).toMatchObject({
      status: "denied",
      reason: "queue is frozen",
    });
    await finished(threadId);
    expect(toolResults(chatRequests("queue")[1])).toEqual(["Tool call denied by Ada: queue is frozen"]);
  });

  it("Edit and approve…: the form starts with the JSON; an invalid edit is refused inline, a valid one runs", async () => {
    const { threadId, card, path } = await askForDeploy("cdn", "Deployed cdn-eu.");
    expect((await post(`${path}/form`, { user: eve })).body).toEqual({
      form: {
        kind: "notice",
        text: "You can't approve this: only the person who asked and the configured approvers can.",
      },
    });
    expect((await post(`${path}/form`, { user: ada })).body).toEqual({
      form: { kind: "form", toolName: "deploy", argumentsJson: '{\n  "service": "cdn"\n}' },
    });
    const invalid = await post(path, {
      user: ada,
      decision: "approve",
      editedArguments: '{"service": ["cdn-eu"]}',
    });
    expect(invalid.body).toEqual({
      reply: {
        kind: "invalid",
        text: expect.stringContaining('Validation failed for tool "deploy":\n  - service:'),
      },
    });
    expect((await record(threadId, card.approvalId)).status).toBe("pending");

    const valid = await post(path, {
      user: ada,
      decision: "approve",
      editedArguments: '{"service": "cdn-eu"}',
    });
    expect(valid.body).toEqual({ reply: { kind: "none" } });
    const approved = await waitForCard(threadId, (shown) => shown.state.kind === "approved");
    expect(approved.state).toMatchObject({
      kind: "approved",
      by: ada,
      changes: ['service: "cdn" → "cdn-eu"'],
    });
    expect(await record(threadId, card.approvalId)).toMatchObject({
      status: "approved",
      arguments: '{"service":"cdn"}',
      editedArguments: '{"service":"cdn-eu"}',
    });
    await finished(threadId);
    const next = chatRequests("cdn")[1]!;
    const [result] = toolResults(next);
    expect(result).toBe(
      'Note: Ada edited the arguments before approving; the call ran with these arguments instead of yours:\n{"service":"cdn-eu"}\ndeployed cdn-eu',
    );
    const assistant = (
      next.body as { messages: { role: string; tool_calls?: { function: { arguments: string } }[] }[] }
    ).messages.find((message) => message.role === "assistant");
    expect(assistant?.tool_calls?.[0]?.function.arguments).toBe('{"service":"cdn"}');
  });
});
