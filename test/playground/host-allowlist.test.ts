import { request } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { parseEnv } from "../../src/app/env.js";
import { createPlaygroundPlatform, type PlaygroundPlatform } from "../../src/playground/index.js";
import { playgroundKeys } from "../../src/runs/index.js";
import { connect, deletePrefix, requireRedis, uniquePrefix } from "../support/redis.js";
import { RecordingInbound } from "./helpers.js";

const ada = { id: "u-ada", name: "Ada" };

interface Started {
  platform: PlaygroundPlatform;
  inbound: RecordingInbound;
  port: number;
  warnings: string[];
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

/** A playground gateway bound to `host` (as docker-compose.yml binds it), on a free port. */
async function startPlayground(host: string, allowedHosts?: string[]): Promise<Started> {
  const redis = connect();
  await requireRedis(redis);
  const prefix = uniquePrefix("playground-hosts");
  const warnings: string[] = [];
  const log = {
    info() {},
    error() {},
    warn: (fields: Record<string, unknown>) => warnings.push(String(fields.host)),
  };
  const platform = createPlaygroundPlatform({
    redis,
    keys: playgroundKeys(prefix),
    port: 0,
    host,
    log,
    ...(allowedHosts ? { allowedHosts } : {}),
  });
  const inbound = new RecordingInbound();
  await platform.start(inbound);
  cleanups.push(async () => {
    await platform.stop();
    await deletePrefix(redis, prefix);
    redis.disconnect();
  });
  return { platform, inbound, port: Number(new URL(platform.url!).port), warnings };
}

/** One request to 127.0.0.1:port with exactly these headers (as a rebinding page's browser would send). */
function send(
  port: number,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: unknown,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = request(
      {
        host: "127.0.0.1",
        port,
        method,
        path,
        setHost: false,
        headers: payload ? { "content-type": "application/json", ...headers } : headers,
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          text += chunk;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on("error", reject);
    req.end(payload);
  });
}

const post = (port: number, headers: Record<string, string>) =>
  send(port, "POST", "/api/threads", headers, { user: ada, text: "@Threadline hello" });

describe("playground Host allowlist (no login, so always on)", () => {
  it("refuses a DNS-rebinding Host when bound to 0.0.0.0, and serves the local names", async () => {
    const { port, warnings } = await startPlayground("0.0.0.0");
    const rebound = await send(port, "GET", "/api/threads", { host: `evil.example:${port}` });
    expect(rebound.status).toBe(403);
    expect(JSON.parse(rebound.body).error).toContain("PLAYGROUND_ALLOWED_HOSTS");
    expect((await send(port, "GET", "/", { host: `evil.example:${port}` })).status).toBe(403);
    expect((await send(port, "GET", "/", { host: "evil.example" })).status).toBe(403);
    // Without a port: a proxy or port forward on 80/443 in front of a local name.
    expect((await send(port, "GET", "/", { host: "localhost" })).status).toBe(200);
    for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`, `LOCALHOST:${port}`])
      expect((await send(port, "GET", "/api/threads", { host })).status, host).toBe(200);
    // Told once per refused name, so the operator can tell an attack from a name to add.
    expect(warnings).toEqual([`evil.example:${port}`, "evil.example"]);
  });

  it("checks Origin against the allowlist, not against the Host header", async () => {
    const { port, inbound } = await startPlayground("0.0.0.0");
    // The rebinding page's own requests: Host and Origin agree, and both are the attacker's name.
    expect(
      (await post(port, { host: `evil.example:${port}`, origin: `http://evil.example:${port}` })).status,
    ).toBe(403);
    // Host allowed, Origin another site, another local app, or opaque.
    for (const origin of [`http://evil.example:${port}`, "http://localhost:8080", "null", "file://"])
      expect((await post(port, { host: `localhost:${port}`, origin })).status, origin).toBe(403);
    expect(inbound.events).toEqual([]);
    // The page itself.
    const allowed = await post(port, { host: `localhost:${port}`, origin: `http://localhost:${port}` });
    expect(allowed.status).toBe(200);
    expect(inbound.events.map((event) => event.kind)).toEqual(["message"]);
  });

  it("answers to the configured extra names: at its own port, or at the port given", async () => {
    const { port } = await startPlayground("0.0.0.0", ["bot.internal", "localhost:8080"]);
    expect((await send(port, "GET", "/api/threads", { host: `bot.internal:${port}` })).status).toBe(200);
    expect((await send(port, "GET", "/api/threads", { host: "localhost:8080" })).status).toBe(200);
    expect((await send(port, "GET", "/api/threads", { host: "bot.internal:9999" })).status).toBe(403);
    expect((await post(port, { host: "localhost:8080", origin: "http://localhost:8080" })).status).toBe(200);
    expect((await post(port, { host: "localhost:8080", origin: "http://localhost:9999" })).status).toBe(403);
  });

  it("keeps the allowlist on a loopback bind too", async () => {
    const { port } = await startPlayground("127.0.0.1");
    expect((await send(port, "GET", "/api/threads", { host: `evil.example:${port}` })).status).toBe(403);
    expect((await send(port, "GET", "/api/threads", { host: `localhost:${port}` })).status).toBe(200);
  });

  it("reads PLAYGROUND_ALLOWED_HOSTS as a list and rejects entries that are not host[:port]", () => {
    expect(
      parseEnv({ PLAYGROUND_ALLOWED_HOSTS: "bot.internal, localhost:8080,[::1]:3000" })
        .PLAYGROUND_ALLOWED_HOSTS,
    ).toEqual(["bot.internal", "localhost:8080", "[::1]:3000"]);
    expect(parseEnv({}).PLAYGROUND_ALLOWED_HOSTS).toEqual([]);
    expect(() => parseEnv({ PLAYGROUND_ALLOWED_HOSTS: "http://bot.internal" })).toThrow(
      /PLAYGROUND_ALLOWED_HOSTS.*host names or host:port/s,
    );
  });
});
