import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ApprovalCard } from "../../src/chat/index.js";
import { threadId as encodeThreadId } from "../../src/chat/index.js";
import type { PlaygroundSnapshot, PlaygroundThread } from "../../src/playground/index.js";
import { playgroundThread } from "../../src/playground/index.js";
import { threadKeys } from "../../src/runs/keys.js";
import { FakeOpenAIServer, textReply, toolCallReply } from "../fakes/openai-server.js";
import { toolResults } from "../support/model-requests.js";
import { CliProcess } from "../support/process.js";
import { connect, deletePrefix, redisEnv, requireRedis, uniquePrefix } from "../support/redis.js";
import { EventStream, freePort } from "./helpers.js";

/**
 * The playground's approval forms end to end: `threadline start` (gateway and worker in one process, the
 * playground's own harness) with the `deploy` tool (approval "ask"), a fake chat-completions server, real
 * Redis. Deny with a reason, and edit and approve with an invalid edit first: what the HTTP API answers,
 * what the card shows, what the model reads next, what Redis holds.
 */
describe("playground: deny with a reason and edit and approve", () => {
  const prefix = uniquePrefix("pg-forms");
  const redis = connect();
  const ada = { id: "u-ada", name: "Ada" };
  const eve = { id: "u-eve", name: "Eve" };
  let model: FakeOpenAIServer;
  let bot: CliProcess | undefined;
  let url: string;
  let events: EventStream;

  beforeAll(async () => {
    await requireRedis(redis);
    model = await FakeOpenAIServer.start();
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    bot = await CliProcess.start(
      "start",
      {
        ...redisEnv(),
        THREADLINE_PREFIX: prefix,
        PLAYGROUND_PORT: String(port),
        OPS_PORT: "0",
        OPENAI_BASE_URL: model.baseURL,
        OPENAI_API_KEY: "sk-test",
        OPENAI_MODEL: "fake-model",
        OPENAI_CONTEXT_WINDOW: "32000",
        THREADLINE_TOOLS_MODULE: "test/fakes/slack-tools.ts",
        LOG_LEVEL: "info",
      },
      "playground: open",
      60_000,
    );
    events = await EventStream.open(`${url}/api/events`);
  }, 90_000);

  afterAll(async () => {
    events?.close();
    await bot?.stop();
    await model.close();
    await deletePrefix(redis, prefix);
    redis.disconnect();
  }, 30_000);

  const post = async (path: string, body: unknown) => {
    const response = await fetch(`${url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };

  /** Starts a thread whose model asks to deploy `service`, then answers `answer`; resolves with its card. */
  async function askForDeploy(service: string, answer: string) {
    const first = `deploy ${service}`;
    model.handler = (request) => {
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
      const snapshot = (await (await fetch(`${url}/api/threads/${threadId}`)).json()) as PlaygroundSnapshot;
      found = snapshot.messages
        .map((message) => message.card)
        .find((card) => card !== undefined && done(card));
      if (!found) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    if (!found) throw new Error("no such card");
    return found;
  }

  const finished = (threadId: string) =>
    events.waitFor((received) =>
      received.some((event) => event.type === "status" && event.thread === threadId && event.status === null),
    );
  const chatRequests = (service: string) =>
    model.requests.filter(
      (request) =>
        request.path === "/chat/completions" && JSON.stringify(request.body).includes(`deploy ${service}`),
    );
  const record = (threadId: string, approvalId: string) =>
    redis.hgetall(threadKeys(prefix, encodeThreadId(playgroundThread(threadId))).approval(approvalId));

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
