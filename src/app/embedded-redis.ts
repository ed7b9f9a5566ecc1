import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync } from "node:fs";
import { createServer } from "node:net";
import { resolve } from "node:path";
import { Redis } from "ioredis";

/** A private redis-server child for `threadline start` without REDIS_URL. */
export interface EmbeddedRedis {
  url: string;
  dir: string;
  stop(): Promise<void>;
}

/** Thrown when no redis-server binary is on PATH; `message` says how to get one. */
export class RedisNotInstalledError extends Error {
  constructor() {
    super(
      [
        "No REDIS_URL is set and no redis-server is installed to start a private one.",
        "Either install Redis (Debian/Ubuntu: sudo apt-get install redis-server · macOS: brew install redis)",
        "or point Threadline at one: REDIS_URL=redis://127.0.0.1:6379",
      ].join("\n"),
    );
    this.name = "RedisNotInstalledError";
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolvePort(port));
    });
  });
}

async function waitForPing(url: string, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`redis-server exited with code ${child.exitCode}`);
    const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    client.on("error", () => {});
    try {
      await client.connect();
      if ((await client.ping()) === "PONG") return;
    } catch {
      // not up yet
    } finally {
      client.disconnect();
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error("redis-server did not answer within 10 s");
}

/**
 * Starts `redis-server` (found on PATH) on a free loopback port with AOF persistence in `dir`
 * (default `./.threadline/redis`). @throws RedisNotInstalledError when there is no binary.
 */
export async function startEmbeddedRedis(dir = resolve(".threadline", "redis")): Promise<EmbeddedRedis> {
  mkdirSync(dir, { recursive: true });
  const port = await freePort();
  const child = spawn(
    "redis-server",
    ["--port", String(port), "--bind", "127.0.0.1", "--dir", dir, "--appendonly", "yes", "--save", ""],
    { stdio: "ignore" },
  );
  const spawnError = new Promise<never>((_, reject) =>
    child.once("error", (err: NodeJS.ErrnoException) =>
      reject(err.code === "ENOENT" ? new RedisNotInstalledError() : err),
    ),
  );
  const url = `redis://127.0.0.1:${port}`;
  await Promise.race([waitForPing(url, child), spawnError]);
  return {
    url,
    dir,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await exited;
    },
  };
}
