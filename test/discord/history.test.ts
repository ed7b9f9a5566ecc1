import type { APIMessage } from "discord.js";
import { describe, expect, it } from "vitest";
import { historyFromMessages } from "../../src/discord/index.js";

const BOT = "100000000000000001";
let seq = 0;
function message(author: string, content: string, fields: Partial<APIMessage> = {}): APIMessage {
  seq++;
  return {
    id: String(200000000000000000 + seq),
    channel_id: "300000000000000000",
    author: {
      id: `4000000000000000${seq}`,
      username: author.toLowerCase(),
      global_name: author,
      discriminator: "0",
      avatar: null,
    },
    content,
    timestamp: new Date(1_700_000_000_000 + seq * 1000).toISOString(),
    edited_timestamp: null,
    tts: false,
    mention_everyone: false,
    mentions: [],
    mention_roles: [],
    attachments: [],
    embeds: [],
    pinned: false,
    type: 0,
    ...fields,
  } as APIMessage;
}

describe("Discord thread history", () => {
  it("turns the API's newest-first list into oldest-first context, with the thread's starter message", () => {
    const starter = message("Alice", "let's plan the launch");
    const system = message("Alice", "", { type: 21, referenced_message: starter });
    const reply = message("Bob", "Friday works");
    const history = historyFromMessages([reply, system], BOT);
    expect(history).toEqual([
      {
        author: { id: starter.author.id, name: "Alice" },
        text: "let's plan the launch",
        sentAt: Date.parse(starter.timestamp),
      },
      {
        author: { id: reply.author.id, name: "Bob" },
        text: "Friday works",
        sentAt: Date.parse(reply.timestamp),
      },
    ]);
  });

  it("drops bots, system messages and empty texts, removes the bot's mention and names other mentions", () => {
    const carol = {
      id: "500000000000000001",
      username: "carol",
      global_name: "Carol",
      discriminator: "0",
      avatar: null,
    };
    const history = historyFromMessages(
      [
        message("Alice", `<@${BOT}> ask <@${carol.id}> about it`, { mentions: [carol] }),
        message("Other bot", "beep", { author: { ...carol, id: "600000000000000001", bot: true } }),
        message("Alice", "pinned something", { type: 6 }),
        message("Bob", "   "),
      ],
      BOT,
    );
    expect(history.map((entry) => entry.text)).toEqual(["ask @Carol about it"]);
  });

  it("keeps the newest messages within the bounds", () => {
    const list = Array.from({ length: 10 }, (_, i) => message("Alice", `message ${9 - i} ${"x".repeat(90)}`));
    const byCount = historyFromMessages(list, BOT, { maxMessages: 3, maxChars: 10_000 });
    expect(byCount.map((entry) => entry.text.slice(0, 9))).toEqual(["message 7", "message 8", "message 9"]);
    const byChars = historyFromMessages(list, BOT, { maxMessages: 50, maxChars: 250 });
    expect(byChars.map((entry) => entry.text.slice(0, 9))).toEqual(["message 8", "message 9"]);
  });
});
