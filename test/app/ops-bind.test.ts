import { readFile } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { afterAll, describe, expect, it } from "vitest";
import { freePort } from "../support/net.js";
import { connect, deletePrefix, redisEnv, uniquePrefix } from "../support/redis.js";
import { CliChild } from "./cli-child.js";

/** The local addresses listening on TCP `port` (Linux /proc/net/tcp and tcp6), e.g. `127.0.0.1`, `0.0.0.0`. */
async function listeners(port: number): Promise<string[]> {
  const found: string[] = [];
  for (const file of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    const table = await readFile(file, "utf8").catch(() => "");
    for (const line of table.split("\n").slice(1)) {
      const [, local, , state] = line.trim().split(/\s+/);
      const [hex, portHex] = (local ?? "").split(":");
      if (state !== "0A" || Number.parseInt(portHex ?? "", 16) !== port) continue; // 0A = LISTEN
      if (hex?.length === 8) found.push(Buffer.from(hex, "hex").reverse().join("."));
      else found.push(hex === "00000000000000000000000000000000" ? "::" : `ipv6:${hex}`);
    }
  }
  return found;
}

describe("the ops port (/healthz, /metrics)", () => {
  const children: CliChild[] = [];
  const prefix = uniquePrefix("ops-bind");
  let taken: Server | undefined;
  afterAll(async () => {
    for (const child of children) child.kill();
    const redis = connect();
    await deletePrefix(redis, prefix);
    redis.disconnect();
    await new Promise<void>((closed) => (taken ? taken.close(() => closed()) : closed()));
  });

  it("binds loopback when OPS_HOST is not set", async () => {
    const port = await freePort();
    const worker = CliChild.spawn("worker", tmpdir(), {
      ...redisEnv(),
      THREADLINE_PREFIX: prefix,
      OPS_PORT: String(port),
      LOG_LEVEL: "info",
    });
    children.push(worker);
    await worker.waitForLine("worker started");
    expect(await listeners(port)).toEqual(["127.0.0.1"]);
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
    worker.signal("SIGTERM");
    await worker.exited;
  }, 60_000);

  it("stops start-up with one line when its port is taken", async () => {
    taken = createServer();
    await new Promise<void>((listening) => taken!.listen(0, "127.0.0.1", listening));
    const port = (taken.address() as { port: number }).port;
    const worker = CliChild.spawn("worker", tmpdir(), {
      ...redisEnv(),
      THREADLINE_PREFIX: prefix,
      OPS_PORT: String(port),
      LOG_LEVEL: "silent",
    });
    children.push(worker);
    expect(await worker.exited).toEqual({ code: 1, signal: null });
    expect(worker.lines.filter((line) => line.trim() !== "")).toEqual([
      `threadline: ops: port ${port} on 127.0.0.1 is in use; set OPS_PORT to a free port (0 turns /healthz and /metrics off)`,
    ]);
  }, 60_000);
});
