import { spawn } from "node:child_process";
import { mkdtemp, readdir, readlink, rm } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "../..");

/** `threadline start` in `cwd` with exactly `env`; resolves with its exit code and output. */
function start(cwd: string, env: Record<string, string>) {
  return new Promise<{ code: number | null; stderr: string }>((done) => {
    const child = spawn(
      process.execPath,
      [join(ROOT, "node_modules/tsx/dist/cli.mjs"), join(ROOT, "src/app/cli.ts"), "start"],
      { cwd, env: { PATH: process.env.PATH ?? "", ...env }, stdio: ["ignore", "ignore", "pipe"] },
    );
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString("utf8");
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    child.on("exit", (code) => {
      clearTimeout(timer);
      done({ code, stderr });
    });
  });
}

/** Pids of processes working in `dir` (redis-server rewrites its command line, but not its cwd). */
async function processesIn(dir: string): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const cwd = await readlink(`/proc/${entry}/cwd`).catch(() => "");
    if (cwd.startsWith(dir)) pids.push(Number(entry));
  }
  return pids;
}

describe("threadline start when something it needs is taken", () => {
  let dir: string;
  let taken: Server;
  let port: number;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "threadline-startup-"));
    taken = createServer();
    await new Promise<void>((listening) => taken.listen(0, "127.0.0.1", listening));
    port = (taken.address() as { port: number }).port;
  });
  afterAll(async () => {
    await new Promise<void>((closed) => taken.close(() => closed()));
    await rm(dir, { recursive: true, force: true });
  });

  it("says in one line what is wrong, exits 1, and leaves no private redis-server behind", async () => {
    // No REDIS_URL: `start` runs a private redis-server in <cwd>/.threadline/redis first.
    const result = await start(dir, { PLAYGROUND_PORT: String(port), OPS_PORT: "0", LOG_LEVEL: "silent" });
    expect(result.code).toBe(1);
    expect(result.stderr.trim().split("\n")).toEqual([
      `threadline: playground: port ${port} on 127.0.0.1 is in use; set PLAYGROUND_PORT (or PORT) to a free port`,
    ]);
    expect(await processesIn(join(dir, ".threadline"))).toEqual([]);
  }, 90_000);
});
