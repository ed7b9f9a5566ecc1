import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { textReply } from "../fakes/openai-server.js";
import { serversOf } from "../support/redis.js";
import { BOB, SlackE2E } from "./e2e-harness.js";

let e2e: SlackE2E;
beforeAll(async () => {
  e2e = await SlackE2E.start();
}, 60_000);
afterAll(async () => {
  await e2e?.close();
});

/**
 * Every command clients send Redis (MONITOR on each server; the calls scripts make inside Redis left out),
 * as its arguments, in the order Redis ran them.
 */
async function monitorRedis(redis: Redis) {
  const commands: string[][] = [];
  const lost: Error[] = [];
  const monitors = await Promise.all(
    serversOf(redis).map(async (server) => {
      // Not `server.monitor()`: ioredis marks the connection as monitoring one microtask after MONITOR's +OK,
      // so a line another client caused that arrives in the same TCP read is taken for a reply and rejects
      // the promise with "Command queue state error" (redis/ioredis#1981, taskforcesh/bullmq#2505; it failed
      // CI on the cluster, where the cluster client's INFO is such a line). A line lost before "monitoring"
      // is from before this test's mention; one lost after it would be this test's, so it fails the test.
      const monitor = server.duplicate({ monitor: true, lazyConnect: false });
      let monitoring = false;
      monitor.on("error", (error: Error) => {
        if (monitoring) lost.push(error);
      });
      await new Promise<void>((resolve) => monitor.once("monitoring", () => resolve()));
      monitoring = true;
      monitor.on("monitor", (_time: string, args: string[], source: string) => {
        if (source !== "lua") commands.push(args);
      });
      return monitor;
    }),
  );
  return {
    commands,
    lost,
    /** Resolves once every command Redis ran before this call has been seen here. */
    async flush(): Promise<void> {
      const sentinel = `${e2e.prefix}:monitor-sentinel:${Math.random()}`;
      // A keyless command, so each server of a cluster runs it itself (a key would be MOVED elsewhere).
      const servers = serversOf(redis);
      await Promise.all(servers.map((server) => server.echo(sentinel)));
      await e2e.until(
        "the MONITOR sentinel",
        async () => commands.filter((args) => args.includes(sentinel)).length >= servers.length,
      );
    },
    stop: () => Promise.all(monitors.map((monitor) => monitor.disconnect())),
  };
}

describe("a mention is acknowledged first", () => {
  it("👀 reaches Slack while the author's name and the thread's history are still being looked up, after only the budget check and the seen-store write", async () => {
    const tag = e2e.tag(textReply("Looked at it."));
    // A new author (their name is not cached) in a thread the gateway never saw (its history is asked for).
    e2e.slack.addUser("U0DAVE", "Dave");
    const root = e2e.slack.store.add({
      channel: e2e.channel,
      ts: e2e.slack.store.nextTs(),
      user: BOB,
      text: "an old thread",
    });
    const names = e2e.slack.holdNext("users.info");
    const history = e2e.slack.holdNext("conversations.replies");
    const monitor = await monitorRedis(e2e.redis);
    try {
      const mention = e2e.mention(tag, "look at this", { user: "U0DAVE", threadTs: root.ts });
      await names.arrived;
      // Held: the name lookup is not answered until the 👀 is there. Before, the ack waited for it.
      await e2e.until("👀 on the mention while users.info is held", async () =>
        e2e.slack.store.reactionsBy(mention, e2e.slack.config.botUserId).includes("eyes"),
      );
      await monitor.flush();
      expect(monitor.lost).toEqual([]);
      // What Redis ran for this mention up to now (its thread's keys, its message key, the reactions budget).
      const about = monitor.commands.filter((args) =>
        args.some(
          (arg) =>
            arg.startsWith(e2e.prefix) &&
            (arg.includes(root.ts) || arg.includes(mention.ts) || arg.includes("slack-rl:reactions.add")),
        ),
      );
      const keys = about.flatMap((args) => args.filter((arg) => arg.startsWith(e2e.prefix)));
      // No intake yet: neither the pending-start mark nor the intake script nor a job; only the seen store
      // (SET of the message's thread, one MULTI of 5 list and meta writes) and one budget check (EVAL).
      expect(keys.filter((key) => !/:slack-seen|:slack-rl:reactions\.add/.test(key))).toEqual([]);
      const budgetChecks = about.filter((args) => args.some((arg) => arg.includes("slack-rl:")));
      expect(budgetChecks.map((args) => args[0]?.toLowerCase())).toEqual(["eval"]);
      expect(about.length, JSON.stringify(about)).toBeLessThanOrEqual(7);
      names.release();
      history.release();
      await e2e.until("the answer", async () =>
        e2e.botMessages(root).some((message) => message.text.includes("Looked at it.")),
      );
    } finally {
      names.release();
      history.release();
      await monitor.stop();
    }
  }, 60_000);

  it("a burst of mentions: every 👀 reaches Slack before the first of them is taken in (no author's name looked up before)", async () => {
    // Eight new authors mention the bot in one instant: each intake starts with a users.info lookup.
    // An order guard, not a timing test: it held before the ack gate too (the lookups' budget checks queue
    // behind the reactions' on the limits connection); test/slack/deferred-ack.test.ts pins the gate itself.
    const burst = Array.from({ length: 8 }, (_, i) => {
      const user = `U0BURST${i}`;
      e2e.slack.addUser(user, `Burst ${i}`);
      return { user, tag: e2e.tag(textReply(`Burst answer ${i}.`)) };
    });
    const first = e2e.slack.store.calls.length;
    // One read: Socket Mode hands the gateway the burst's envelopes together (the fake would write each
    // frame on its own, and the gateway could take the first in before the others were written).
    const sockets = [...e2e.slack.delivery.sockets].map(
      (socket) => (socket as unknown as { _socket: import("node:net").Socket })._socket,
    );
    for (const socket of sockets) socket.cork();
    const mentions = burst.map(({ user, tag }) => e2e.mention(tag, "all at once", { user }));
    for (const socket of sockets) socket.uncork();
    await e2e.until("every answer", async () =>
      mentions.every((mention, i) =>
        e2e.botMessages(mention).some((message) => message.text.includes(`Burst answer ${i}.`)),
      ),
    );
    const calls = e2e.slack.store.calls.slice(first);
    const acks = calls.flatMap((call, index) =>
      call.method === "reactions.add" &&
      call.args.name === "eyes" &&
      mentions.some((mention) => mention.ts === String(call.args.timestamp))
        ? [index]
        : [],
    );
    const lookups = calls.flatMap((call, index) =>
      call.method === "users.info" && burst.some(({ user }) => user === String(call.args.user))
        ? [index]
        : [],
    );
    expect(acks).toHaveLength(mentions.length);
    expect(lookups.length).toBeGreaterThan(0);
    expect(
      Math.max(...acks),
      calls.map((call) => `${call.method} ${call.args.user ?? call.args.timestamp ?? ""}`).join("\n"),
    ).toBeLessThan(Math.min(...lookups));
  }, 60_000);
});
