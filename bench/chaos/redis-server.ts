import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { join } from "node:path";
import { Redis } from "ioredis";
import { freePort } from "../../test/support/net.js";
import { track } from "./children.js";

/**
 * A private `redis-server` for one chaos run: a free loopback port, AOF on with `appendfsync always` in
 * `dir`, so a SHUTDOWN and a start again with the same directory keeps every acknowledged write. The port
 * stays the same across restarts (the workers and the gateway keep their REDIS_URL).
 */
export class PrivateRedis {
  private child: ChildProcess | undefined;

  private constructor(
    readonly port: number,
    readonly dir: string,
  ) {}

  /** Starts one in `dir` (which must exist). @throws when redis-server is missing or does not answer. */
  static async start(dir: string): Promise<PrivateRedis> {
    const redis = new PrivateRedis(await freePort(), dir);
    await redis.up();
    return redis;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** True while the server process runs. */
  get running(): boolean {
    return this.child !== undefined;
  }

  /** Starts the server (again) with the same port and directory; resolves once it answers PING. */
  async up(): Promise<void> {
    if (this.child) return;
    const child = spawn(
      "redis-server",
      [
        "--port",
        String(this.port),
        "--bind",
        "127.0.0.1",
        "--dir",
        this.dir,
        "--appendonly",
        "yes",
        "--appendfsync",
        "always",
        "--save",
        "",
        "--logfile",
        join(this.dir, "redis.log"),
      ],
      { stdio: "ignore" },
    );
    track(child);
    this.child = child;
    child.once("exit", () => {
      if (this.child === child) this.child = undefined;
    });
    const spawnFailed = once(child, "error").then(([err]) => {
      throw err as Error;
    });
    await Promise.race([this.waitForPing(child), spawnFailed]);
  }

  /** `SHUTDOWN` (a graceful stop: the AOF is flushed); resolves once the process is gone. */
  async down(): Promise<void> {
    const child = this.child;
    if (!child) return;
    const exited = once(child, "exit");
    const admin = new Redis(this.url, {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    admin.on("error", () => {});
    try {
      await admin.connect();
      await admin.call("SHUTDOWN");
    } catch {
      // SHUTDOWN closes the connection instead of answering
    } finally {
      admin.disconnect();
    }
    const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
    await exited;
    clearTimeout(timer);
  }

  /** SIGKILL; resolves once the process is gone. */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child) return;
    const exited = once(child, "exit");
    child.kill("SIGKILL");
    await exited;
  }

  private async waitForPing(child: ChildProcess): Promise<void> {
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      if (child.exitCode !== null) throw new Error(`redis-server exited with code ${child.exitCode}`);
      const client = new Redis(this.url, {
        lazyConnect: true,
        maxRetriesPerRequest: 0,
        retryStrategy: () => null,
      });
      client.on("error", () => {});
      try {
        await client.connect();
        if ((await client.ping()) === "PONG") return;
      } catch {
        // not up yet (or still loading the AOF)
      } finally {
        client.disconnect();
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`redis-server on port ${this.port} did not answer within 20 s`);
  }
}
