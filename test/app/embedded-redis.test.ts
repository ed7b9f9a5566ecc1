import { mkdtempSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { describe, expect, it } from "vitest";
import { RedisNotInstalledError, startEmbeddedRedis } from "../../src/app/embedded-redis.js";

describe("embedded redis", () => {
  it("starts a private redis-server with persistence in the given directory, and stops it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tl-redis-"));
    const redis = await startEmbeddedRedis(dir);
    const client = new Redis(redis.url);
    try {
      await client.set("k", "v");
      expect(await client.get("k")).toBe("v");
      expect(await client.config("GET", "appendonly")).toEqual(["appendonly", "yes"]);
    } finally {
      client.disconnect();
      await redis.stop();
    }
    expect(readdirSync(dir).length).toBeGreaterThan(0);
  });

  it("explains how to get Redis when redis-server is not installed", async () => {
    const path = process.env.PATH;
    process.env.PATH = "/nonexistent";
    try {
      const error = await startEmbeddedRedis(mkdtempSync(join(tmpdir(), "tl-redis-"))).catch(
        (err: unknown) => err,
      );
      expect(error).toBeInstanceOf(RedisNotInstalledError);
      expect((error as Error).message).toContain("REDIS_URL=redis://127.0.0.1:6379");
      expect((error as Error).message).toContain("apt-get install redis-server");
    } finally {
      process.env.PATH = path;
    }
  });
});
