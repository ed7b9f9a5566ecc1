import { type ChildProcess, spawn } from "node:child_process";
import { Redis } from "ioredis";
import { freePort } from "./net.js";

/**
 * A `redis-server` of the test's own on a free loopback port (no persistence), which the test can stop
 * and start again on the same port: a Redis outage for the processes pointed at it, without touching the
 * shared Redis other tests use.
 */
export class PrivateRedis {
  /** Every server still running, killed when the test process exits whatever the tests did. */
  private static readonly running = new Set<ChildProcess>();
  private static hooked = false;
  private child: ChildProcess | undefined;

  private constructor(readonly port: number) {}

  static async start(): Promise<PrivateRedis> {
    const redis = new PrivateRedis(await freePort());
    await redis.up();
    return redis;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** A client for the test itself (fails fast while the server is down). */
  client(): Redis {
    return new Redis(this.url, { maxRetriesPerRequest: 1 });
  }

  /** Starts the server (again) and resolves once it answers PING. */
  async up(): Promise<void> {
    const child = spawn(
      "redis-server",
      ["--port", String(this.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
      { stdio: "ignore" },
    );
    this.child = child;
    PrivateRedis.track(child);
    const deadline = Date.now() + 10_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`redis-server exited with code ${child.exitCode}`);
      const probe = new Redis(this.url, {
        lazyConnect: true,
        maxRetriesPerRequest: 0,
        retryStrategy: () => null,
      });
      probe.on("error", () => {});
      const ok = await probe
        .connect()
        .then(() => probe.ping())
        .then((reply) => reply === "PONG")
        .catch(() => false)
        .finally(() => probe.disconnect());
      if (ok) return;
      if (Date.now() > deadline) throw new Error("redis-server did not answer within 10 s");
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  /**
   * A test that fails before its cleanup must not leave a redis-server behind (they were found still running
   * long after the suite): servers are killed when the test process exits.
   */
  private static track(child: ChildProcess): void {
    PrivateRedis.running.add(child);
    child.once("exit", () => PrivateRedis.running.delete(child));
    if (PrivateRedis.hooked) return;
    PrivateRedis.hooked = true;
    process.once("exit", () => {
      for (const running of PrivateRedis.running) running.kill("SIGKILL");
    });
  }

  /** Kills the server at once (SIGKILL: no goodbye to the clients); resolves when it is gone. */
  async down(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGKILL");
    await exited;
  }
}
