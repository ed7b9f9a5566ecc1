import { randomUUID } from "node:crypto";
import { afterAll, beforeAll } from "vitest";
import type { ThreadRef } from "../../src/chat/index.js";
import { createDiscordRest, DiscordOutbound, UNLIMITED_BUDGET } from "../../src/discord/index.js";
import { PLAYGROUND_BOT, PlaygroundOutbound, PlaygroundStore } from "../../src/playground/index.js";
import { playgroundKeys } from "../../src/runs/index.js";
import { createSlackPlatform } from "../../src/slack/index.js";
import { FakeDiscordServer } from "../fakes/discord-server.js";
import { MemoryOutbound } from "../fakes/memory-outbound.js";
import { FakeSlackServer } from "../fakes/slack-server.js";
import { describeChatOutbound } from "../support/outbound-contract.js";
import { connect, keysMatching, requireRedis, uniquePrefix } from "../support/redis.js";

describeChatOutbound("MemoryOutbound (test double)", async () => {
  const outbound = new MemoryOutbound();
  const thread: ThreadRef = {
    platform: "playground",
    workspace: "local",
    channel: "c",
    thread: randomUUID(),
  };
  return {
    outbound,
    thread,
    // A message the double does not know is someone else's (reactions on it are allowed).
    userMessageId: "user-1",
    texts: async () =>
      outbound
        .messages(thread)
        .filter((message) => message.kind !== "external" && !message.deleted)
        .map((message) => message.text),
    reactions: async (id) => [...(outbound.message(id)?.reactions ?? [])],
    close: async () => {},
  };
});

describeChatOutbound("SlackOutbound (fake Slack)", async () => {
  const slack = await FakeSlackServer.start();
  const platform = createSlackPlatform({
    botToken: slack.config.botToken,
    apiUrl: slack.apiUrl,
    retry: { retries: 3, factor: 1, minTimeout: 10, maxTimeout: 50 },
  });
  const root = slack.post({ user: "U0ALICE", channel: "C1", text: "hello" });
  const thread: ThreadRef = {
    platform: "slack",
    workspace: slack.config.teamId,
    channel: "C1",
    thread: root.ts,
  };
  const bot = slack.config.botUserId;
  return {
    outbound: platform.outbound,
    thread,
    userMessageId: root.ts,
    texts: async () =>
      slack.store
        .botMessages("C1", root.ts, bot)
        .filter((message) => !message.deleted)
        .map((message) => message.text),
    reactions: async (id) => slack.store.reactionsBy(slack.store.get("C1", id)!, bot),
    close: () => slack.close(),
  };
});

let discord: FakeDiscordServer;
let guild: string;
let channel: string;
beforeAll(async () => {
  discord = await FakeDiscordServer.start();
  guild = discord.addGuild("Acme");
  channel = discord.addChannel(guild, "general");
});
afterAll(async () => {
  await discord.close();
});

describeChatOutbound("DiscordOutbound (fake Discord)", async () => {
  const rest = createDiscordRest({ token: discord.token, apiUrl: discord.apiUrl, budget: UNLIMITED_BUDGET });
  const outbound = new DiscordOutbound({ rest, minEditIntervalMs: 0 });
  const alice = discord.addUser("Alice", [{ guildId: guild }]);
  const root = discord.say(channel, alice, "hello");
  discord.startThread(root.id, alice, "hello");
  const thread: ThreadRef = { platform: "discord", workspace: guild, channel, thread: root.id };
  return {
    outbound,
    thread,
    userMessageId: root.id,
    texts: async () => discord.botMessages(thread.thread).map((message) => message.content),
    reactions: async (id) => discord.botReactions(id),
    close: async () => outbound.close(),
  };
});

describeChatOutbound("PlaygroundOutbound (real Redis)", async () => {
  const redis = connect();
  await requireRedis(redis);
  const prefix = uniquePrefix("outbound-contract");
  const store = new PlaygroundStore(redis, { keys: playgroundKeys(prefix) });
  const outbound = new PlaygroundOutbound(store);
  const alice = { id: "U0ALICE", name: "Alice" };
  const threadKey = `t-${randomUUID()}`;
  const now = Date.now();
  await store.addMessage(
    threadKey,
    { id: "u-1", kind: "user", author: alice, text: "hello", sentAt: now },
    { thread: { id: threadKey, title: "hello", createdAt: now, createdBy: alice, lastActivity: now } },
  );
  const thread: ThreadRef = {
    platform: "playground",
    workspace: "local",
    channel: "general",
    thread: threadKey,
  };
  const bot = async () =>
    ((await store.snapshot(threadKey))?.messages ?? []).filter(
      (message) => message.author.id === PLAYGROUND_BOT.id,
    );
  return {
    outbound,
    thread,
    userMessageId: "u-1",
    texts: async () => (await bot()).map((message) => message.text),
    reactions: async (id) => {
      const message = (await store.snapshot(threadKey))?.messages.find((candidate) => candidate.id === id);
      return (message?.reactions ?? [])
        .filter((reaction) => reaction.users.some((user) => user.id === PLAYGROUND_BOT.id))
        .map((reaction) => reaction.emoji);
    },
    close: async () => {
      for (const key of await keysMatching(redis, `${prefix}*`)) await redis.del(key);
      redis.disconnect();
    },
  };
});
