import type { AddressInfo } from "node:net";
import type { Redis } from "ioredis";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Metrics } from "../../src/app/metrics.js";
import { type OpsService, serveOps } from "../../src/app/ops-server.js";
import { parseEnv } from "../../src/config/index.js";
import { createRunQueue, type RunQueue } from "../../src/runs/index.js";
import { connect, deletePrefix, redisEnv, requireRedis, uniquePrefix } from "../support/redis.js";

/** Records what the ops server logs. */
function recordingLog() {
  const lines: { level: string; message: string }[] = [];
  const record = (level: string) => (_fields: Record<string, unknown>, message: string) =>
    void lines.push({ level, message });
  return { lines, info: record("info"), warn: record("warn"), error: record("error") };
}

let prefix: string;
let redis: Redis;
let bull: Redis;
let queue: RunQueue;
const services: OpsService[] = [];

beforeEach(async () => {
  prefix = uniquePrefix("dashboard");
  redis = connect();
  await requireRedis(redis);
  bull = connect({ blocking: true });
  queue = createRunQueue(bull, prefix);
});

afterEach(async () => {
  for (const service of services.splice(0)) await service.close();
  await queue.close();
  await deletePrefix(redis, prefix);
  bull.disconnect();
  redis.disconnect();
});

/** Starts the ops server as `threadline gateway` / `start` would, with these extra variables. */
async function start(vars: Record<string, string>, options: { withDashboard?: boolean; host?: string } = {}) {
  const env = parseEnv({ ...redisEnv(), THREADLINE_PREFIX: prefix, ...vars });
  const log = recordingLog();
  const service = await serveOps({
    env,
    metrics: new Metrics({ defaultMetrics: false }),
    healthy: async () => true,
    log,
    withDashboard: options.withDashboard ?? true,
    port: 0,
    ...(options.host === undefined ? {} : { host: options.host }),
  });
  services.push(service);
  const base = `http://127.0.0.1:${(service.server.address() as AddressInfo).port}`;
  return { base, log, service };
}

/** `Authorization` header of HTTP Basic auth. */
function basic(user: string, password: string): Record<string, string> {
  return { authorization: `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}` };
}

interface QueuesReply {
  queues: {
    name: string;
    readOnlyMode: boolean;
    counts: Record<string, number>;
    jobs: { id: string; data: unknown }[];
  }[];
}

async function queues(base: string, headers: Record<string, string> = {}): Promise<QueuesReply> {
  const response = await fetch(`${base}/dashboard/api/queues?activeQueue=runs&status=waiting&page=1`, {
    headers,
  });
  expect(response.status).toBe(200);
  return (await response.json()) as QueuesReply;
}

describe("runs dashboard (bull-board)", () => {
  it("serves the page, its assets and the runs queue with its jobs from Redis, read-only by default", async () => {
    await queue.add("run", { threadId: "slack:T1:C1:1.0", runId: "run-1" }, { jobId: "run-1" });
    const { base } = await start({ DASHBOARD: "true" });

    const page = await fetch(`${base}/dashboard`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toContain("text/html");
    const html = await page.text();
    expect(html).toContain('<base href="/dashboard/"');
    expect(html).toContain("<title>Threadline runs</title>");
    const script = /src="(static\/js\/main\.[^"]+\.js)"/.exec(html)?.[1];
    expect(script).toBeDefined();
    const asset = await fetch(`${base}/dashboard/${script}`);
    expect(asset.status).toBe(200);
    expect(asset.headers.get("content-type")).toContain("javascript");
    expect((await asset.text()).length).toBeGreaterThan(1000);

    const [runs, ...others] = (await queues(base)).queues;
    expect(others).toEqual([]);
    expect(runs?.name).toBe("runs");
    expect(runs?.readOnlyMode).toBe(true);
    expect(runs?.counts.waiting).toBe(1);
    expect(runs?.jobs.map((job) => [job.id, job.data])).toEqual([
      ["run-1", { threadId: "slack:T1:C1:1.0", runId: "run-1" }],
    ]);
    // Read-only is enforced by the API, not only hidden in the page.
    const retry = await fetch(`${base}/dashboard/api/queues/runs/pause`, { method: "PUT" });
    expect(retry.status).toBe(405);
    expect(await queue.isPaused()).toBe(false);
    // The ops routes still answer next to it.
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    expect((await fetch(`${base}/dashboard/no-such-thing/x.js`)).status).toBe(404);
  });

  it("allows actions only with DASHBOARD_READ_ONLY=false, and never from another web site", async () => {
    const { base } = await start({ DASHBOARD: "true", DASHBOARD_READ_ONLY: "false" });
    expect((await queues(base)).queues[0]?.readOnlyMode).toBe(false);
    const crossSite = await fetch(`${base}/dashboard/api/queues/runs/pause`, {
      method: "PUT",
      headers: { origin: "https://evil.example" },
    });
    expect(crossSite.status).toBe(403);
    expect(await queue.isPaused()).toBe(false);
    const pause = await fetch(`${base}/dashboard/api/queues/runs/pause`, { method: "PUT" });
    expect(pause.status).toBe(200);
    expect(await queue.isPaused()).toBe(true);
  });

  it("requires DASHBOARD_PASSWORD through HTTP Basic auth when it is set (any user name)", async () => {
    const { base, log } = await start({ DASHBOARD: "true", DASHBOARD_PASSWORD: "s3cret pass" });
    const anonymous = await fetch(`${base}/dashboard`);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get("www-authenticate")).toMatch(/^Basic realm="Threadline dashboard"/);
    expect((await fetch(`${base}/dashboard`, { headers: basic("admin", "wrong") })).status).toBe(401);
    expect((await fetch(`${base}/dashboard`, { headers: basic("admin", "s3cret pas") })).status).toBe(401);
    expect((await fetch(`${base}/dashboard/api/queues`)).status).toBe(401);
    expect((await fetch(`${base}/dashboard`, { headers: basic("admin", "s3cret pass") })).status).toBe(200);
    expect((await queues(base, basic("anyone", "s3cret pass"))).queues[0]?.name).toBe("runs");
    // The password guards the dashboard only; probes stay open.
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    expect((await fetch(`${base}/metrics`)).status).toBe(200);
    expect(log.lines.filter((line) => line.level === "warn")).toEqual([]);
  });

  it("is absent when DASHBOARD is off, and on processes that do not serve it (workers)", async () => {
    const off = await start({});
    expect((await fetch(`${off.base}/dashboard`)).status).toBe(404);
    expect((await fetch(`${off.base}/dashboard/api/queues`)).status).toBe(404);
    expect(off.service.dashboard).toBeUndefined();
    const worker = await start({ DASHBOARD: "true" }, { withDashboard: false });
    expect((await fetch(`${worker.base}/dashboard`)).status).toBe(404);
    expect((await fetch(`${worker.base}/healthz`)).status).toBe(200);
  });

  it("warns when the dashboard has no password and the server is reachable beyond loopback", async () => {
    const open = await start({ DASHBOARD: "true" });
    const warnings = open.log.lines.filter((line) => line.level === "warn").map((line) => line.message);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain("set DASHBOARD_PASSWORD");
    const local = await start({ DASHBOARD: "true" }, { host: "127.0.0.1" });
    expect(local.log.lines.filter((line) => line.level === "warn")).toEqual([]);
    expect((await fetch(`${local.base}/dashboard`)).status).toBe(200);
  });
});
