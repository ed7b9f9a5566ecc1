import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ApprovalCard } from "../../src/chat/index.js";
import type { PlaygroundMessage, PlaygroundThread } from "../../src/playground/index.js";
import { type FakeReply, textReply, toolCallReply } from "../fakes/openai-server.js";
import { CUT_TEXT, hangingAnswer } from "../support/interrupt-scenarios.js";
import { toolResults, userTexts } from "../support/model-requests.js";
import { PlaygroundE2E } from "../support/playground-e2e.js";
import { EventStream } from "./helpers.js";

/**
 * Issue #18 in the playground (`threadline start`, gateway and worker in one process, as the playground
 * runs): ⚡ (reaction and `!!`) cuts a streaming answer, a text reply while a card waits gets the private
 * notice, the reminder mentions the requester once, and two cards of one batch resolve independently.
 */
describe("playground: ⚡, the waiting notice, the reminder, two cards of one batch", {
  timeout: 60_000,
}, () => {
  const ada = { id: "u-ada", name: "Ada" };
  const eve = { id: "u-eve", name: "Eve" };
  let e2e: PlaygroundE2E;

  beforeAll(async () => {
    e2e = await PlaygroundE2E.start("pg-interrupt", {
      THREADLINE_CONFIG: "test/fakes/approval-reminder.config.mjs",
      THREADLINE_APPROVAL_TIMEOUT_MS: "120000",
    });
  }, 90_000);

  afterAll(async () => {
    await e2e?.close();
  }, 30_000);

  const post = async (path: string, body: unknown) => (await e2e.post(path, body)).body;
  const snapshot = (threadId: string) => e2e.snapshot(threadId);
  const until = (what: string, check: () => Promise<boolean> | boolean) => e2e.until(what, check, 30_000);

  /** Ada starts a thread whose model follows `steps`; resolves with its id and tag. */
  async function start(text: string, ...steps: FakeReply[]) {
    const tag = e2e.tag(...steps);
    const body = await post("/api/threads", { user: ada, text: `@Threadline [${tag}] ${text}` });
    return { tag, threadId: (body as { thread: PlaygroundThread }).thread.id };
  }
  const requests = (tag: string) => e2e.requests(tag);
  const reply = async (threadId: string, text: string, user = ada) =>
    ((await post(`/api/threads/${threadId}/messages`, { user, text })) as { message: PlaygroundMessage })
      .message;
  const react = (threadId: string, messageId: string, emoji: string, user = ada) =>
    post(`/api/threads/${threadId}/messages/${messageId}/reactions`, { user, emoji, added: true });
  const botText = async (threadId: string) =>
    (await snapshot(threadId)).messages
      .filter((message) => message.kind === "bot")
      .map((message) => message.text)
      .join("\n");
  const marks = async (threadId: string, messageId: string) =>
    ((await snapshot(threadId)).messages.find((message) => message.id === messageId)?.reactions ?? [])
      .filter((reaction) => reaction.users.some((user) => user.name === "Threadline"))
      .map((reaction) => reaction.emoji);
  /** The marks the bot added to a message, in order, as the live events told every browser. */
  const marksAdded = (threadId: string, messageId: string) =>
    e2e.events.received.flatMap((event) =>
      event.type === "reaction" &&
      event.thread === threadId &&
      event.id === messageId &&
      event.added &&
      event.user.name === "Threadline"
        ? [event.emoji]
        : [],
    );
  const finished = (threadId: string) => e2e.finished(threadId);
  const idle = (threadId: string) =>
    until("the thread to be idle", async () => {
      return (await e2e.redis.exists(e2e.keys(threadId).lease)) === 0;
    });
  const cards = async (threadId: string): Promise<ApprovalCard[]> =>
    (await snapshot(threadId)).messages.flatMap((message) => (message.card ? [message.card] : []));
  const decide = (threadId: string, card: ApprovalCard, decision: "approve" | "deny") =>
    post(`/api/threads/${threadId}/approvals/${card.approvalId}`, { user: ada, decision });

  const CUT_LINE = `${CUT_TEXT}\n\n[This answer was cut off here by a new message from Ada.]`;
  const assistantText = (tag: string, index: number) => {
    const body = requests(tag)[index]?.body as
      | { messages?: { role: string; content: unknown }[] }
      | undefined;
    return body?.messages?.find((message) => message.role === "assistant")?.content;
  };

  it("a ⚡ reaction on a queued reply cuts the streaming answer; the next request carries the cut text and the reply", async () => {
    const { tag, threadId } = await start("write an essay", hangingAnswer(), textReply("A haiku it is."));
    await until("the streamed text", async () => (await botText(threadId)).includes(CUT_TEXT));
    const queued = await reply(threadId, "no, a haiku");
    await until("🧭", async () => (await marks(threadId, queued.id)).includes("compass"));
    await react(threadId, queued.id, "zap");
    await finished(threadId);
    await idle(threadId);
    expect(await requests(tag)[0]!.outcome).toBe("client-disconnected");
    expect(assistantText(tag, 1)).toBe(CUT_LINE);
    expect(userTexts(requests(tag)[1]).at(-1)).toBe("Ada: no, a haiku");
    await until("✅ only", async () => (await marks(threadId, queued.id)).join() === "white_check_mark");
    expect(marksAdded(threadId, queued.id)).toEqual(["compass", "zap", "white_check_mark"]);
    expect(await botText(threadId)).toMatch(
      /Here is a long answer that\s+⚡ _interrupted by Ada_[\s\S]*A haiku it is\./,
    );
  });

  it("a reply starting with `!!` is an interrupt at once, delivered without the prefix", async () => {
    const { tag, threadId } = await start("write it in Go", hangingAnswer(), textReply("Python then."));
    await until("the streamed text", async () => (await botText(threadId)).includes(CUT_TEXT));
    const queued = await reply(threadId, "!! stop, use Python");
    await finished(threadId);
    await idle(threadId);
    expect(await requests(tag)[0]!.outcome).toBe("client-disconnected");
    expect(assistantText(tag, 1)).toBe(CUT_LINE);
    expect(userTexts(requests(tag)[1]).at(-1)).toBe("Ada: stop, use Python");
    await until("✅ only", async () => (await marks(threadId, queued.id)).join() === "white_check_mark");
    expect(marksAdded(threadId, queued.id)).toEqual(["zap", "white_check_mark"]);
  });

  it("a text reply while a card waits gets the private notice and is read after the decision", async () => {
    const eveEvents = await EventStream.open(`${e2e.url}/api/events?user=${eve.id}`);
    try {
      const { tag, threadId } = await start(
        "deploy the api",
        toolCallReply([{ id: "n1", name: "deploy", arguments: { service: "api" } }]),
        textReply("Deployed, and noted."),
      );
      await until("a card", async () => (await cards(threadId)).length > 0);
      const queued = await reply(threadId, "also tell me when it is done", eve);
      await eveEvents.waitFor((received) =>
        received.some((event) => event.type === "notice" && event.thread === threadId),
      );
      const notice = eveEvents.received.find((event) => event.type === "notice" && event.thread === threadId);
      expect(notice).toMatchObject({
        userId: eve.id,
        text: "Still waiting for Approve/Deny on `deploy`; your message will be read after it.",
      });
      expect(requests(tag)).toHaveLength(1);
      await decide(threadId, (await cards(threadId))[0]!, "approve");
      await finished(threadId);
      await idle(threadId);
      expect(toolResults(requests(tag)[1])).toEqual(["deployed api"]);
      expect(userTexts(requests(tag)[1]).at(-1)).toBe("Eve: also tell me when it is done");
      await until("✅", async () => (await marks(threadId, queued.id)).includes("white_check_mark"));
    } finally {
      eveEvents.close();
    }
  });

  it("the reminder mentions the requester once in the thread, also after a heartbeat", async () => {
    const { tag, threadId } = await start(
      "deploy the api",
      toolCallReply([{ id: "r1", name: "deploy", arguments: { service: "api" } }]),
      textReply("Deployed after the reminder."),
    );
    await until("a card", async () => (await cards(threadId)).length > 0);
    const reminders = async () =>
      (await snapshot(threadId)).messages.filter(
        (message) => message.kind === "bot" && message.text.includes("is waiting for your approval"),
      );
    await until("the reminder", async () => (await reminders()).length > 0);
    expect((await reminders())[0]!.text).toBe(
      `<@${ada.id}> \`deploy\` is waiting for your approval: use Approve or Deny on the card above.`,
    );
    const lease = e2e.keys(threadId).lease;
    const before = await e2e.redis.pttl(lease);
    await until("a lease heartbeat", async () => (await e2e.redis.pttl(lease)) > before + 1_000);
    expect(await reminders()).toHaveLength(1);
    await decide(threadId, (await cards(threadId))[0]!, "approve");
    await finished(threadId);
    await idle(threadId);
    expect(await reminders()).toHaveLength(1);
    expect(toolResults(requests(tag)[1])).toEqual(["deployed api"]);
  });

  it("two calls of one batch that ask get a card each and resolve independently, in reverse order", async () => {
    const { tag, threadId } = await start(
      "deploy api and web",
      toolCallReply([
        { id: "b1", name: "deploy", arguments: { service: "api" } },
        { id: "b2", name: "deploy", arguments: { service: "web" } },
      ]),
      textReply("One deployed, one denied."),
    );
    await until("two cards", async () => (await cards(threadId)).length >= 2);
    const [api, web] = (await cards(threadId)) as [ApprovalCard, ApprovalCard];
    expect(api.argumentsText).toContain("service: api");
    expect(web.argumentsText).toContain("service: web");
    await decide(threadId, web, "deny");
    await until("the web card denied", async () => (await cards(threadId))[1]?.state.kind === "denied");
    expect((await cards(threadId))[0]?.state.kind).toBe("pending");
    expect(requests(tag)).toHaveLength(1);
    await decide(threadId, api, "approve");
    await finished(threadId);
    await idle(threadId);
    expect((await cards(threadId)).map((card) => card.state.kind)).toEqual(["approved", "denied"]);
    const results = toolResults(requests(tag)[1]);
    expect(results[0]).toBe("deployed api");
    expect(results[1]).toContain("denied by Ada");
  });
});
