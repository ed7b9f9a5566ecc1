import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { resolve } from "node:path";
import { Redis } from "ioredis";
import { isAlive, isNode, redisServersIn } from "./processes.js";

/** A private redis-server for `threadline start` without REDIS_URL. */
export interface EmbeddedRedis {
  url: string;
  dir: string;
  /** The redis-server's pid. */
  pid: number;
  /** True when a healthy redis-server left running by an earlier start was taken over instead of a new one. */
  reused: boolean;
  /** SIGTERM (it writes its AOF and exits), SIGKILL after 10 s; resolves once it is gone. Never throws. */
  stop(): Promise<void>;
  /** Synchronous last resort for exit paths (a second Ctrl-C, a missed deadline, `process.on("exit")`). */
  stopNow(): void;
}

/** The data folder's lock file (owner and redis-server pids, port). */
const LOCK_FILE = "threadline.lock.json";

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

/**
 * The first line of `redis-server --version` (the binary `startEmbeddedRedis` would run), or undefined when
 * none is on PATH or it does not answer within 5 s. Never throws.
 */
export async function redisServerVersion(): Promise<string | undefined> {
  return new Promise((done) => {
    const child = spawn("redis-server", ["--version"], { stdio: ["ignore", "pipe", "ignore"] });
    let out = "";
    const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
    child.stdout.on("data", (data: Buffer) => {
      out += data.toString("utf8");
    });
    child.once("error", () => {
      clearTimeout(timer);
      done(undefined);
    });
    // "close", not "exit": a process can exit before its output has been read (it then came out empty).
    child.once("close", (code) => {
      clearTimeout(timer);
      done(code === 0 ? out.split("\n")[0]?.trim() || "redis-server" : undefined);
    });
  });
}

/** Thrown when another live `threadline start` holds the data folder; `message` says what to do. */
export class DataFolderInUseError extends Error {
  constructor(dir: string, owner: number) {
    super(
      `Another threadline (pid ${owner}) is using the private Redis in ${dir}. Stop it first, or run this one in another folder or with REDIS_URL. (If pid ${owner} is not Threadline, delete ${resolve(dir, LOCK_FILE)}.)`,
    );
    this.name = "DataFolderInUseError";
  }
}

/** The lock file: who owns the folder, and the redis-server serving it. */
interface Lock {
  owner: number;
  redisPid?: number;
  port?: number;
}

function readLock(dir: string): Lock | undefined {
  try {
    const lock = JSON.parse(readFileSync(resolve(dir, LOCK_FILE), "utf8")) as Partial<Lock>;
    return typeof lock.owner === "number" ? (lock as Lock) : undefined;
  } catch {
    return undefined;
  }
}

function writeLock(dir: string, lock: Lock, exclusive = false): void {
  writeFileSync(resolve(dir, LOCK_FILE), JSON.stringify(lock), { flag: exclusive ? "wx" : "w" });
}

function removeLock(dir: string): void {
  if (readLock(dir)?.owner === process.pid) rmSync(resolve(dir, LOCK_FILE), { force: true });
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

/** The `dir` the redis-server at `url` serves, or undefined when it does not answer within 2 s. */
async function servedDir(url: string): Promise<string | undefined> {
  const client = new Redis(url, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: 2000,
  });
  client.on("error", () => {});
  try {
    await client.connect();
    const reply = (await client.config("GET", "dir")) as string[];
    return reply[1];
  } catch {
    return undefined;
  } finally {
    client.disconnect();
  }
}

async function waitForPing(url: string, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`redis-server exited with code ${child.exitCode}`);
    if ((await servedDir(url)) !== undefined) return;
    await sleep(100);
  }
  throw new Error("redis-server did not answer within 10 s");
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves once `pid` is gone. */
async function terminate(pid: number, graceMs = 10_000): Promise<void> {
  if (!(pid > 0)) return;
  const signal = (name: NodeJS.Signals) => {
    try {
      process.kill(pid, name);
    } catch {
      // already gone
    }
  };
  signal("SIGTERM");
  const deadline = Date.now() + graceMs;
  while (isAlive(pid)) {
    if (Date.now() > deadline) signal("SIGKILL");
    await sleep(50);
  }
}

/**
 * Takes the folder's lock. A live owner other than this process → DataFolderInUseError. A dead owner's
 * redis-server is reused when it answers for this folder (its url is returned), else stopped.
 */
async function lockFolder(dir: string): Promise<{ url: string; pid: number } | undefined> {
  for (let attempt = 0; ; attempt++) {
    const lock = readLock(dir);
    if (lock && lock.owner !== process.pid && isAlive(lock.owner) && isNode(lock.owner))
      throw new DataFolderInUseError(dir, lock.owner);
    let reuse: { url: string; pid: number } | undefined;
    if (lock?.redisPid !== undefined && lock.port !== undefined && isAlive(lock.redisPid)) {
      const url = `redis://127.0.0.1:${lock.port}`;
      if ((await servedDir(url)) === dir) reuse = { url, pid: lock.redisPid };
    }
    // Any other redis-server on this folder (unhealthy, or no lock names it) is stopped: never two on one
    // folder. Only processes that are redis-servers working in it: a recycled pid is never signalled.
    for (const pid of await redisServersIn(dir)) if (pid !== reuse?.pid) await terminate(pid);
    if (lock) rmSync(resolve(dir, LOCK_FILE), { force: true });
    try {
      writeLock(
        dir,
        { owner: process.pid, ...(reuse ? { redisPid: reuse.pid, port: portOf(reuse.url) } : {}) },
        true,
      );
      return reuse;
    } catch (err) {
      // Another start took the lock between our read and write: look again (it is now a live owner).
      if ((err as NodeJS.ErrnoException).code !== "EEXIST" || attempt > 3) throw err;
    }
  }
}

function portOf(url: string): number {
  return Number(new URL(url).port);
}

function handle(dir: string, url: string, pid: number, reused: boolean, child?: ChildProcess): EmbeddedRedis {
  const gone = () => (child ? child.exitCode !== null || child.signalCode !== null : !isAlive(pid));
  return {
    url,
    dir,
    pid,
    reused,
    async stop() {
      if (pid > 0 && !gone()) await terminate(pid);
      removeLock(dir);
    },
    stopNow() {
      if (pid > 0 && !gone()) {
        try {
          process.kill(pid, "SIGTERM");
        } catch {
          // already gone
        }
      }
      removeLock(dir);
    },
  };
}

/**
 * Starts `redis-server` (found on PATH) on a free loopback port with AOF persistence in `dir`
 * (default `./.threadline/redis`), in its own session so a terminal's Ctrl-C reaches only Threadline, which
 * stops it last. The folder is locked (`threadline.lock.json`): a healthy redis-server left by a crashed
 * start is reused, an unhealthy one stopped; a live start elsewhere holding it → DataFolderInUseError.
 * @throws RedisNotInstalledError when there is no binary.
 */
export async function startEmbeddedRedis(dir = resolve(".threadline", "redis")): Promise<EmbeddedRedis> {
  mkdirSync(dir, { recursive: true });
  const reuse = await lockFolder(dir);
  if (reuse) return handle(dir, reuse.url, reuse.pid, true);
  try {
    const port = await freePort();
    const child = spawn(
      "redis-server",
      ["--port", String(port), "--bind", "127.0.0.1", "--dir", dir, "--appendonly", "yes", "--save", ""],
      // detached = setsid: the terminal's SIGINT goes to Threadline's process group, not to this one.
      { stdio: "ignore", detached: true },
    );
    const spawnError = new Promise<never>((_, reject) =>
      child.once("error", (err: NodeJS.ErrnoException) =>
        reject(err.code === "ENOENT" ? new RedisNotInstalledError() : err),
      ),
    );
    // No pid: it did not spawn, and the error event (next tick) says why.
    if (child.pid === undefined) await spawnError;
    const url = `redis://127.0.0.1:${port}`;
    const started = handle(dir, url, child.pid ?? -1, false, child);
    try {
      await Promise.race([waitForPing(url, child), spawnError]);
    } catch (err) {
      started.stopNow();
      throw err;
    }
    writeLock(dir, { owner: process.pid, redisPid: started.pid, port });
    return started;
  } catch (err) {
    removeLock(dir);
    throw err;
  }
}
