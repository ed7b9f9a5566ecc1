import type { Redis } from "ioredis";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { EventBus } from "../../src/runs/bus.js";
import { connect, requireRedis, serversOf, uniquePrefix } from "../support/redis.js";

/**
 * The event bus's subscriber, on one server and (under `npm run test:cluster`) on a Redis Cluster. Pub/sub
 * is the fast path only: what is published while the subscriber is away is lost, so the bus must tell its
 * waiters every time it is subscribed again, and they read the state back (see invariants.test.ts item 3).
 */
let redis: Redis;
let bus: EventBus | undefined;

beforeAll(async () => {
  redis = connect();
  await requireRedis(redis);
  return () => redis.quit();
});

afterEach(async () => {
  await bus?.close();
  bus = undefined;
});

/** Kills the bus's subscriber connection (found by its name on whichever server holds it). */
async function killSubscriber(channel: string): Promise<void> {
  for (const server of serversOf(redis)) {
    const clients = (await server.client("LIST")) as string;
    const line = clients.split("\n").find((entry) => entry.includes(` name=${channel}:bus `));
    if (line) return void (await server.client("KILL", "ID", /\bid=(\d+)/.exec(line)![1]!));
  }
  throw new Error("the bus's subscriber is not connected");
}

function nextCall(register: (handler: () => void) => void): Promise<void> {
  return new Promise((resolve) => register(resolve));
}

describe("EventBus", () => {
  it("tells its waiters after its subscriber reconnects, and receives events again", async () => {
    bus = EventBus.forPrefix(redis, uniquePrefix("bus"));
    await bus.start();
    const received: string[] = [];
    bus.on("run-1", (event) => received.push(event.type));

    await redis.publish(bus.channel, JSON.stringify({ type: "abort", runId: "run-1" }));
    await expect.poll(() => received).toEqual(["abort"]);

    let reconnects = 0;
    const reconnected = nextCall((resolve) =>
      bus!.onReconnect(() => {
        reconnects++;
        resolve();
      }),
    );
    await killSubscriber(bus.channel);
    // Before, on a cluster, this never came: the Cluster client's subscriber replaces a dropped connection
    // without a word, so an event published in the gap waited for the run's heartbeat.
    await reconnected;
    expect(reconnects).toBe(1);

    // Subscribed again when the handlers run: an event published now arrives.
    await redis.publish(bus.channel, JSON.stringify({ type: "abort", runId: "run-1" }));
    await expect.poll(() => received).toEqual(["abort", "abort"]);
  });
});
