import { request } from "node:http";
import { connect as connectTcp } from "node:net";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ApprovalCard, ChatUser } from "../../src/chat/index.js";
import {
  PlaygroundError,
  type PlaygroundEvent,
  type PlaygroundMessage,
  type PlaygroundSnapshot,
  playgroundThread,
} from "../../src/playground/index.js";
import { PlaygroundFixture } from "./helpers.js";

const ada: ChatUser = { id: "u-ada", name: "Ada" };
const bob: ChatUser = { id: "u-bob", name: "Bob" };
const bot: ChatUser = { id: "threadline", name: "Threadline", isBot: true };

let fixture: PlaygroundFixture;

beforeEach(async () => {
  fixture = await new PlaygroundFixture().start();
});

afterEach(async () => {
  await fixture.close();
});

async function newThread(text = "@Threadline summarize the logs"): Promise<string> {
  const { status, body } = await fixture.api("POST", "/api/threads", { user: ada, text });
  expect(status).toBe(200);
  return (body.thread as { id: string }).id;
}

async function snapshot(threadId: string): Promise<PlaygroundSnapshot> {
  const { status, body } = await fixture.api("GET", `/api/threads/${threadId}`);
  expect(status).toBe(200);
  return body as unknown as PlaygroundSnapshot;
}

describe("playground HTTP API → ChatInbound", () => {
  it("creates a thread with a message that mentions the bot and hands it to the inbound", async () => {
    const threadId = await newThread("@Threadline summarize the logs");

    const [event] = fixture.inbound.events;
    expect(fixture.inbound.events).toHaveLength(1);
    expect(event?.kind).toBe("message");
    const message = event?.kind === "message" ? event.message : undefined;
    expect(message).toMatchObject({
      thread: { platform: "playground", workspace: "local", channel: "playground", thread: threadId },
      author: ada,
      text: "summarize the logs",
      mentionsBot: true,
      attachments: [],
    });
    // Acknowledged as it was stored, before the gateway was handed it (as Slack's adapter does on arrival).
    expect(fixture.inbound.acknowledged).toEqual([
      { messageId: message?.id, authorId: ada.id, handedFirst: false },
    ]);

    const threads = await fixture.api("GET", "/api/threads");
    expect(threads.body.threads).toMatchObject([
      { id: threadId, title: "summarize the logs", createdBy: ada },
    ]);
    const shown = await snapshot(threadId);
    expect(shown.messages).toEqual([
      {
        id: message?.id,
        kind: "user",
        author: ada,
        text: "summarize the logs",
        sentAt: expect.any(Number),
        mentionsBot: true,
        reactions: [],
      },
    ]);
  });

  it("passes replies on, mentioning the bot only when they say @Threadline", async () => {
    const threadId = await newThread();
    await fixture.api("POST", `/api/threads/${threadId}/messages`, { user: bob, text: "also the errors" });
    await fixture.api("POST", `/api/threads/${threadId}/messages`, {
      user: bob,
      text: "hey @threadline, stop",
    });

    const messages = fixture.inbound.events.flatMap((e) => (e.kind === "message" ? [e.message] : []));
    expect(messages.map((m) => [m.author.name, m.text, m.mentionsBot])).toEqual([
      ["Ada", "summarize the logs", true],
      ["Bob", "also the errors", false],
      ["Bob", "hey stop", true],
    ]);
    // Only mentions are acknowledged.
    expect(fixture.inbound.acknowledged.map((ack) => ack.messageId)).toEqual([
      messages[0]?.id,
      messages[2]?.id,
    ]);
  });

  it("posts a draft submitted twice once (same draft id), and a new draft again", async () => {
    const started = await Promise.all(
      [1, 2].map(() =>
        fixture.api("POST", "/api/threads", { user: ada, text: "@Threadline deploy", draftId: "draft-0001" }),
      ),
    );
    const threadId = (started[0]!.body.thread as { id: string }).id;
    expect((started[1]!.body.thread as { id: string }).id).toBe(threadId);
    const path = `/api/threads/${threadId}/messages`;
    const replies = await Promise.all(
      [1, 2].map(() => fixture.api("POST", path, { user: bob, text: "also staging", draftId: "draft-0002" })),
    );
    const ids = replies.map((reply) => (reply.body.message as PlaygroundMessage).id);
    expect(ids[1]).toBe(ids[0]);
    // Another user's submission with the same draft id, and a new draft, are their own messages.
    await fixture.api("POST", path, { user: ada, text: "also staging", draftId: "draft-0002" });
    await fixture.api("POST", path, { user: bob, text: "also staging", draftId: "draft-0003" });

    const messages = fixture.inbound.events.flatMap((e) => (e.kind === "message" ? [e.message] : []));
    expect(messages.map((m) => [m.author.name, m.text])).toEqual([
      ["Ada", "deploy"],
      ["Bob", "also staging"],
      ["Ada", "also staging"],
      ["Bob", "also staging"],
    ]);
    const shown = (await fixture.api("GET", `/api/threads/${threadId}`))
      .body as unknown as PlaygroundSnapshot;
    expect(shown.messages.filter((m) => m.kind === "user")).toHaveLength(4);
    expect((await fixture.api("GET", "/api/threads")).body.threads).toHaveLength(1);
  });

  it("relays reactions once per change, edits and deletes of the author's own messages", async () => {
    const threadId = await newThread();
    const reply = (
      await fixture.api("POST", `/api/threads/${threadId}/messages`, { user: ada, text: "wait" })
    ).body.message as PlaygroundMessage;
    const path = `/api/threads/${threadId}/messages/${reply.id}`;

    await fixture.api("POST", `${path}/reactions`, {
      user: ada,
      emoji: "hourglass_flowing_sand",
      added: true,
    });
    await fixture.api("POST", `${path}/reactions`, {
      user: ada,
      emoji: "hourglass_flowing_sand",
      added: true,
    });
    await fixture.api("POST", `${path}/reactions`, {
      user: ada,
      emoji: "hourglass_flowing_sand",
      added: false,
    });
    expect((await fixture.api("PATCH", path, { user: bob, text: "hijack" })).status).toBe(403);
    expect((await fixture.api("PATCH", path, { user: ada, text: "wait for me" })).status).toBe(200);
    expect((await fixture.api("DELETE", path, { user: ada })).status).toBe(200);

    const thread = playgroundThread(threadId);
    expect(fixture.inbound.events.slice(2)).toEqual([
      {
        kind: "reaction",
        event: { thread, messageId: reply.id, user: ada, emoji: "hourglass_flowing_sand", added: true },
      },
      {
        kind: "reaction",
        event: { thread, messageId: reply.id, user: ada, emoji: "hourglass_flowing_sand", added: false },
      },
      { kind: "edited", message: expect.objectContaining({ id: reply.id, text: "wait for me", thread }) },
      { kind: "deleted", thread, messageId: reply.id },
    ]);
    expect((await snapshot(threadId)).messages.map((m) => m.text)).toEqual(["summarize the logs"]);
  });

  it("relays button clicks and returns the private reply to the clicker", async () => {
    const threadId = await newThread();
    fixture.inbound.buttonReply = { kind: "notice", text: "You can't approve this." };

    const { status, body } = await fixture.api("POST", `/api/threads/${threadId}/approvals/1-abc`, {
      user: bob,
      decision: "always",
    });

    expect(status).toBe(200);
    expect(body.reply).toEqual({ kind: "notice", text: "You can't approve this." });
    expect(fixture.inbound.events.at(-1)).toEqual({
      kind: "button",
      click: { thread: playgroundThread(threadId), approvalId: "1-abc", decision: "always", user: bob },
    });
  });

  it("relays the everyone-here decision and refuses a click with any other decision", async () => {
    const threadId = await newThread();
    fixture.inbound.buttonReply = { kind: "none" };
    const path = `/api/threads/${threadId}/approvals/1-abc`;
    const before = fixture.inbound.events.length;
    for (const decision of ["alwaysthread", "ALWAYS", "toString", "", 1]) {
      expect((await fixture.api("POST", path, { user: ada, decision })).status).toBe(400);
    }
    expect(fixture.inbound.events.length).toBe(before);

    expect((await fixture.api("POST", path, { user: ada, decision: "alwaysThread" })).status).toBe(200);
    expect(fixture.inbound.events.at(-1)).toEqual({
      kind: "button",
      click: { thread: playgroundThread(threadId), approvalId: "1-abc", decision: "alwaysThread", user: ada },
    });
  });

  it("relays a denial with its reason (the deny-with-reason form); a reason over 500 characters is a 400", async () => {
    const threadId = await newThread();
    fixture.inbound.buttonReply = { kind: "none" };
    const path = `/api/threads/${threadId}/approvals/1-abc`;
    const before = fixture.inbound.events.length;
    expect(
      (await fixture.api("POST", path, { user: ada, decision: "deny", reason: "x".repeat(501) })).status,
    ).toBe(400);
    expect(fixture.inbound.events.length).toBe(before);
    expect(
      (await fixture.api("POST", path, { user: ada, decision: "deny", reason: "wrong cluster" })).status,
    ).toBe(200);
    expect(fixture.inbound.events.at(-1)).toEqual({
      kind: "button",
      click: {
        thread: playgroundThread(threadId),
        approvalId: "1-abc",
        decision: "deny",
        user: ada,
        reason: "wrong cluster",
      },
    });
  });

  it("refuses cross-site, non-JSON, malformed and unknown requests without calling the inbound", async () => {
    const threadId = await newThread();
    const before = fixture.inbound.events.length;
    const reply = { user: ada, text: "hi" };
    const path = `/api/threads/${threadId}/messages`;

    expect((await fixture.api("POST", path, reply, { origin: "https://evil.example" })).status).toBe(403);
    const form = await fetch(`${fixture.url}${path}`, {
      method: "POST",
      headers: { "content-type": "text/plain" },
      body: JSON.stringify(reply),
    });
    expect(form.status).toBe(415);
    expect((await fixture.api("POST", path, { user: ada, text: "   " })).status).toBe(400);
    expect(
      (await fixture.api("POST", path, { user: { id: "threadline", name: "X" }, text: "hi" })).status,
    ).toBe(400);
    expect((await fixture.api("POST", "/api/threads/t-nope/messages", reply)).status).toBe(404);
    expect((await fixture.api("GET", "/api/threads/t-nope")).status).toBe(404);
    // Only a mention of the bot: nothing to say.
    const mentionOnly = await fixture.api("POST", path, { user: ada, text: " @Threadline " });
    expect(mentionOnly.status).toBe(400);
    expect(String(mentionOnly.body.error)).toContain("empty_message");
    expect((await fixture.api("POST", "/api/threads", { user: ada, text: "@Threadline" })).status).toBe(400);
    expect((await fixture.api("POST", path, reply, { origin: fixture.url })).status).toBe(200);

    expect(fixture.inbound.events.length).toBe(before + 1);
  });

  it("answers a request target that is not a URL with 400 and keeps serving", async () => {
    const { port } = new URL(fixture.url);
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = connectTcp(Number(port), "127.0.0.1", () =>
        socket.write("GET http://[/ HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"),
      );
      let data = "";
      socket.on("data", (chunk) => {
        data += chunk.toString("utf8");
      });
      socket.on("end", () => resolve(data));
      socket.on("error", reject);
    });
    expect(raw.split("\r\n")[0]).toBe("HTTP/1.1 400 Bad Request");
    expect(raw).toContain("malformed request URL");
    expect((await fixture.api("GET", "/api/info")).status).toBe(200);
  });

  it("answers only requests addressed to this machine (no DNS rebinding)", async () => {
    const status = (host: string) =>
      new Promise<number | undefined>((resolve, reject) => {
        request(`${fixture.url}/api/threads`, { headers: { host } }, (response) => {
          response.resume();
          resolve(response.statusCode);
        })
          .on("error", reject)
          .end();
      });
    const port = new URL(fixture.url).port;
    expect(await status(`attacker.example:${port}`)).toBe(403);
    expect(await status(`localhost:${port}`)).toBe(200);
    expect(await status(`[::1]:${port}`)).toBe(200);
  });

  it("serves the page, its scripts and the bot's info", async () => {
    const page = await fetch(`${fixture.url}/`);
    expect(page.headers.get("content-type")).toContain("text/html");
    expect(await page.text()).toContain("<title>Threadline playground</title>");
    const script = await fetch(`${fixture.url}/static/app.js`);
    expect(script.headers.get("content-type")).toContain("text/javascript");
    expect((await fetch(`${fixture.url}/static/../server.ts`)).status).toBe(404);

    const info = await fixture.api("GET", "/api/info");
    expect(info.body).toMatchObject({
      botName: "Threadline",
      reactions: { steer: "compass", followUp: "hourglass_flowing_sand", stop: "octagonal_sign" },
      emoji: { compass: "🧭" },
      // The page's toolbar comes from the reaction table: which roles people set, and where.
      roles: {
        steer: { setBy: { on: "user", label: "steer" } },
        stop: { setBy: { on: "any", label: "stop" } },
        delivered: { setBy: "bot" },
      },
      notice: null,
    });
  });
});

describe("playground outbound (a worker's side) → Redis → browsers", () => {
  const card = (state: ApprovalCard["state"]): ApprovalCard => ({
    approvalId: "1-abc",
    toolName: "deploy",
    argumentsText: "target: production",
    approvers: ["Ada"],
    requesterName: "Ada",
    expiresAt: 1_900_000_000_000,
    state,
  });

  it("shows every outbound operation live, in order, and in the thread snapshot", async () => {
    const threadId = await newThread();
    const userMessageId = (await snapshot(threadId)).messages[0]!.id;
    const events = await fixture.events(ada.id);
    const out = fixture.worker.outbound;
    const thread = playgroundThread(threadId);

    await out.react(thread, userMessageId, "eyes");
    await out.setStatus(thread, "is thinking…");
    const reply = await out.post(thread, "Working");
    await out.edit(thread, reply.id, "Working on **it**");
    const approval = await out.postApproval(thread, card({ kind: "pending", waitingMessages: 0 }));
    const decided = card({ kind: "approved", by: ada, at: 1_800_000_000_000, always: false });
    await out.updateApproval(thread, approval.id, decided);
    await out.unreact(thread, userMessageId, "eyes");
    await out.react(thread, userMessageId, "white_check_mark");
    await out.react(thread, userMessageId, "white_check_mark");
    const scratch = await out.post(thread, "scratch");
    await out.delete(thread, scratch.id);
    await out.setStatus(thread, null);
    await events.waitFor((received) => received.some((e) => e.type === "status" && e.status === null));

    expect(
      events.received.map((e) => (e.type === "message" ? `${e.type}:${e.message.text}` : e.type)),
    ).toEqual([
      "reaction",
      "status",
      "message:Working",
      "text",
      expect.stringMatching(/^message:🔐 \*\*Approval needed\*\* to run `deploy`/),
      "card",
      "reaction",
      "reaction",
      "message:scratch",
      "deleted",
      "status",
    ]);

    const shown = await snapshot(threadId);
    expect(shown.status).toBeNull();
    expect(shown.messages.map((m) => [m.kind, m.text.split("\n")[0]])).toEqual([
      ["user", "summarize the logs"],
      ["bot", "Working on **it**"],
      ["approval", "🔐 **Approval** to run `deploy`"],
    ]);
    expect(shown.messages[0]!.reactions).toEqual([{ emoji: "white_check_mark", users: [bot] }]);
    expect(shown.messages[1]!.editedAt).toEqual(expect.any(Number));
    expect(shown.messages[2]!.card).toEqual(decided);
  });

  it("rejects edits of unknown, deleted or other people's messages like a platform would", async () => {
    const threadId = await newThread();
    const thread = playgroundThread(threadId);
    const userMessageId = (await snapshot(threadId)).messages[0]!.id;
    const out = fixture.worker.outbound;
    const text = await out.post(thread, "hello");
    await out.delete(thread, text.id);

    const code = (promise: Promise<unknown>) =>
      promise.then(
        () => "resolved",
        (err: unknown) => (err instanceof PlaygroundError ? err.code : String(err)),
      );
    expect(await code(out.edit(thread, "b-missing", "x"))).toBe("message_not_found");
    expect(await code(out.edit(thread, text.id, "x"))).toBe("message_not_found");
    expect(await code(out.edit(thread, userMessageId, "x"))).toBe("cant_update_message");
    expect(await code(out.delete(thread, userMessageId))).toBe("cant_update_message");
    const posted = await out.post(thread, "plain");
    expect(await code(out.updateApproval(thread, posted.id, card({ kind: "expired", at: 1 })))).toBe(
      "cant_update_message",
    );
    expect((await snapshot(threadId)).messages.map((m) => m.text)).toEqual(["summarize the logs", "plain"]);
  });

  it("delivers a private notice only to its user's browser", async () => {
    // Subscribed before the thread exists: on a Redis Cluster an event published on another node may reach
    // a stream opened just after it, so the thread's own events are expected, then left out.
    const adaEvents = await fixture.events(ada.id);
    const bobEvents = await fixture.events(bob.id);
    const threadId = await newThread();
    const thread = playgroundThread(threadId);
    const later = (events: PlaygroundEvent[]) =>
      events.filter((e) => e.type !== "thread" && e.type !== "message");

    await fixture.worker.outbound.notify(thread, ada.id, "The queue is full.");
    await fixture.worker.outbound.setStatus(thread, "is thinking…");
    await Promise.all([
      adaEvents.waitFor((events) => later(events).length >= 2),
      bobEvents.waitFor((events) => later(events).length >= 1),
    ]);

    expect(later(adaEvents.received).map((e) => e.type)).toEqual(["notice", "status"]);
    expect(later(adaEvents.received)[0]).toEqual({
      type: "notice",
      thread: threadId,
      userId: ada.id,
      text: "The queue is full.",
    });
    // Redis delivers in order: Bob's stream saw the status after the notice would have arrived.
    expect(later(bobEvents.received).map((e) => e.type)).toEqual(["status"]);
  });
});
