import { describe, expect, it } from "vitest";
import { CHANNEL_REFUSED_NOTICE, restrictInbound, USER_REFUSED_NOTICE } from "../../src/app/access.js";
import type { ChatInbound, ChatUser, IncomingMessage, ThreadRef } from "../../src/chat/index.js";
import type { RunLogger } from "../../src/runs/index.js";
import { MemoryOutbound } from "../fakes/memory-outbound.js";

const ada: ChatUser = { id: "U-ada", name: "Ada" };
const bob: ChatUser = { id: "U-bob", name: "Bob" };
const general: ThreadRef = { platform: "playground", workspace: "local", channel: "general", thread: "t1" };
const ops: ThreadRef = { ...general, channel: "ops", thread: "t2" };

function message(id: string, thread: ThreadRef, author: ChatUser, mentionsBot = true): IncomingMessage {
  return { id, thread, author, text: "@Threadline hi", attachments: [], mentionsBot, sentAt: 0 };
}

function setup(allow: { users?: string[]; channels?: string[] }) {
  const seen: string[] = [];
  const inbound: ChatInbound = {
    message: async (m) => void seen.push(`message ${m.id}`),
    messageEdited: async (m) => void seen.push(`edit ${m.id}`),
    messageDeleted: async (_thread, id) => void seen.push(`delete ${id}`),
    reaction: async (event) => void seen.push(`reaction ${event.messageId}`),
    button: async () => ({ kind: "none" }),
  };
  const logged: { level: string; message: string; fields: Record<string, unknown> }[] = [];
  const log: RunLogger = {
    info: (fields, msg) => void logged.push({ level: "info", message: msg, fields }),
    warn: (fields, msg) => void logged.push({ level: "warn", message: msg, fields }),
    error: (fields, msg) => void logged.push({ level: "error", message: msg, fields }),
  };
  const chat = new MemoryOutbound();
  const gate = restrictInbound(inbound, allow, { outbound: chat, log });
  const notices = () =>
    chat.ops
      .filter((op) => op.op === "notify")
      .map((op) => ({ to: op.userId, thread: op.thread, text: op.text }));
  return { gate, seen, logged, chat, notices };
}

describe("allow lists: a refused message is never silent", () => {
  it("tells the author of a refused mention privately, once per thread, and logs every refusal", async () => {
    const { gate, seen, logged, notices } = setup({ channels: ["ops"] });
    await gate.message(message("m1", general, ada));
    await gate.message(message("m2", general, ada)); // same person, same thread: no second notice
    await gate.message(message("m3", ops, ada)); // allowed
    expect(seen).toEqual(["message m3"]);
    expect(notices()).toEqual([
      { to: "U-ada", thread: "playground:local:general:t1", text: CHANNEL_REFUSED_NOTICE },
    ]);
    expect(logged).toEqual([
      {
        level: "info",
        message: "message refused by the allow list",
        fields: { platform: "playground", channel: "general", user: "U-ada", list: "allow.channels" },
      },
      expect.objectContaining({ message: "message refused by the allow list" }),
    ]);
  });

  it("names the users list when the person is not allowed, and each person is told", async () => {
    const { gate, seen, notices } = setup({ users: ["U-ada"] });
    await gate.message(message("m1", general, bob));
    await gate.message(message("m2", general, ada));
    expect(seen).toEqual(["message m2"]);
    expect(notices()).toEqual([
      { to: "U-bob", thread: "playground:local:general:t1", text: USER_REFUSED_NOTICE },
    ]);
  });

  it("stays quiet about chatter that does not address the bot, edits and reactions", async () => {
    const { gate, seen, logged, notices } = setup({ channels: ["ops"] });
    await gate.message(message("m1", general, ada, false));
    await gate.messageEdited(message("m1", general, ada));
    await gate.reaction({
      thread: general,
      messageId: "m1",
      user: ada,
      emoji: "octagonal_sign",
      added: true,
    });
    expect(seen).toEqual([]);
    expect(notices()).toEqual([]);
    expect(logged).toEqual([]);
  });

  it("a notice that fails is logged and never rejects", async () => {
    const { gate, chat, logged } = setup({ channels: ["ops"] });
    chat.failNext("notify", 1, new Error("channel_not_found"));
    await expect(gate.message(message("m1", general, ada))).resolves.toBeUndefined();
    expect(logged.map((entry) => entry.message)).toEqual([
      "message refused by the allow list",
      "allow-list notice failed",
    ]);
  });
});
