import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type BusEvent, EventBus } from "../../src/runs/bus.js";
import { TestCluster } from "../app/redis-cluster.js";

/**
 * The event bus on a Redis Cluster whose node under its subscriber dies: the subscriber retries that node
 * a few times, then subscribes on another node, tells its waiters (they read back what they may have
 * missed), and receives events published on the surviving nodes. A cluster of this test's own (one of its
 * nodes is killed), whose other masters keep serving (`cluster-require-full-coverage no`).
 */
let cluster: TestCluster;
let client: ReturnType<TestCluster["client"]>;
let bus: EventBus | undefined;

beforeAll(async () => {
  cluster = await TestCluster.start(3, { fullCoverage: false });
  client = cluster.client();
}, 60_000);

afterAll(async () => {
  await bus?.close();
  client?.disconnect();
  await cluster?.stop();
});

/** The port of the node whose CLIENT LIST shows the bus's subscriber (by its connection name). */
async function subscriberNode(channel: string, ports: readonly number[]): Promise<number | undefined> {
  for (const port of ports) {
    const node = new Redis({ port, host: "127.0.0.1", lazyConnect: true, maxRetriesPerRequest: 0 });
    node.on("error", () => {});
    try {
      await node.connect();
      const clients = (await node.client("LIST")) as string;
      if (clients.includes(` name=${channel}:bus `)) return port;
    } catch {
      // A dead node holds nobody.
    } finally {
      node.disconnect();
    }
  }
  return undefined;
}

describe("EventBus on a Redis Cluster", () => {
  it("moves its subscriber to another node when its node dies, tells its waiters, and receives events again", async () => {
    const channel = `tl-bus-cluster-${process.pid}:events`;
    bus = new EventBus(client, channel);
    await bus.start();
    const first = await subscriberNode(channel, cluster.ports);
    expect(first).toBeDefined();

    let reconnects = 0;
    const reconnected = new Promise<void>((resolve) =>
      bus!.onReconnect(() => {
        reconnects++;
        resolve();
      }),
    );
    await cluster.kill(first!);
    await reconnected;
    const survivors = cluster.ports.filter((port) => port !== first);
    const now = await subscriberNode(channel, survivors);
    expect(survivors).toContain(now);

    // An event published on a surviving node reaches the waiter (a cluster forwards PUBLISH to every node).
    const received = new Promise<BusEvent>((resolve) => bus!.on("run-1", resolve));
    const publisher = new Redis({ port: survivors.find((port) => port !== now) ?? now!, host: "127.0.0.1" });
    try {
      await publisher.publish(channel, JSON.stringify({ type: "abort", runId: "run-1" }));
      expect(await received).toEqual({ type: "abort", runId: "run-1" });
    } finally {
      publisher.disconnect();
    }
    expect(reconnects).toBe(1);
  }, 60_000);
});
