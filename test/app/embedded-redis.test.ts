import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { afterEach, describe, expect, it } from "vitest";
import {
  DataFolderInUseError,
  RedisNotInstalledError,
  startEmbeddedRedis,
} from "../../src/app/embedded-redis.js";
import { freePort } from "../support/net.js";
import { eventually, processesIn } from "./cli-child.js";

const LOCK = "threadline.lock.json";

/** The pid of a process that has exited (a crashed owner). */
async function deadPid(): Promise<number> {
  const child = spawn("true");
  await new Promise((r) => child.once("exit", r));
  return child.pid ?? 0;
}

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

describe("the private redis-server's data folder lock", () => {
  const others: ChildProcess[] = [];
  const dirs: string[] = [];
  afterEach(async () => {
    for (const child of others.splice(0)) child.kill("SIGKILL");
    for (const dir of dirs.splice(0)) for (const pid of await processesIn(dir)) process.kill(pid, "SIGKILL");
  });
  function folder(): string {
    const dir = mkdtempSync(join(tmpdir(), "tl-redis-lock-"));
    dirs.push(dir);
    return dir;
  }

  it("reuses a healthy redis-server a crashed start left running — never a second one on the folder", async () => {
    const dir = folder();
    const first = await startEmbeddedRedis(dir);
    const client = new Redis(first.url);
    await client.set("kept", "yes");
    client.disconnect();
    // The owner crashed (SIGKILL): its lock names a process that is gone; its redis-server still runs.
    const lock = JSON.parse(readFileSync(join(dir, LOCK), "utf8")) as Record<string, unknown>;
    writeFileSync(join(dir, LOCK), JSON.stringify({ ...lock, owner: await deadPid() }));

    const second = await startEmbeddedRedis(dir);
    expect({ reused: second.reused, pid: second.pid, url: second.url }).toEqual({
      reused: true,
      pid: first.pid,
      url: first.url,
    });
    expect(await processesIn(dir)).toEqual([first.pid]);
    const again = new Redis(second.url);
    expect(await again.get("kept")).toBe("yes");
    again.disconnect();
    await second.stop();
    expect(await processesIn(dir)).toEqual([]);
  });

  it("refuses a folder another live start holds, and starts nothing", async () => {
    const dir = folder();
    const owner = spawn(process.execPath, ["-e", "setTimeout(() => {}, 30_000)"]);
    others.push(owner);
    writeFileSync(join(dir, LOCK), JSON.stringify({ owner: owner.pid }));
    const error = await startEmbeddedRedis(dir).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(DataFolderInUseError);
    expect((error as Error).message).toContain(`pid ${owner.pid}`);
    expect(await processesIn(dir)).toEqual([]);
  });

  it("ignores a lock whose owner pid now belongs to some other program (a recycled pid)", async () => {
    const dir = folder();
    const stranger = spawn("sleep", ["30"]);
    others.push(stranger);
    writeFileSync(join(dir, LOCK), JSON.stringify({ owner: stranger.pid }));
    const started = await startEmbeddedRedis(dir);
    expect(started.reused).toBe(false);
    expect(stranger.exitCode).toBeNull(); // never signalled
    await started.stop();
  });

  it("stops a redis-server running on the folder that no lock names, then runs exactly one", async () => {
    const dir = folder();
    const port = await freePort();
    const stray = spawn(
      "redis-server",
      ["--port", String(port), "--bind", "127.0.0.1", "--dir", dir, "--save", ""],
      {
        stdio: "ignore",
      },
    );
    others.push(stray);
    expect(await eventually(async () => (await processesIn(dir)).includes(stray.pid ?? 0), 5000)).toBe(true);
    const started = await startEmbeddedRedis(dir);
    expect(started.reused).toBe(false);
    expect(await processesIn(dir)).toEqual([started.pid]);
    await started.stop();
  });
});
