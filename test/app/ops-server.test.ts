import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { Metrics } from "../../src/app/metrics.js";
import { startOpsServer } from "../../src/app/ops-server.js";

let close: (() => Promise<void>) | undefined;
afterEach(async () => {
  await close?.();
  close = undefined;
});

async function start(healthy: () => Promise<boolean>) {
  const metrics = new Metrics({ defaultMetrics: false });
  const server = await startOpsServer(0, metrics, healthy);
  close = () => new Promise((r) => server.close(() => r()));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { metrics, base };
}

describe("ops server", () => {
  it("answers /healthz with 200 when healthy and 503 when not", async () => {
    let ok = true;
    const { base } = await start(async () => ok);
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    ok = false;
    const response = await fetch(`${base}/healthz`);
    expect(response.status).toBe(503);
    expect(await response.json()).toEqual({ status: "unavailable" });
  });

  it("exposes the run metrics in Prometheus text format", async () => {
    const { metrics, base } = await start(async () => true);
    metrics.runs.inc({ outcome: "completed" });
    metrics.toolCalls.inc({ tool: "fetch_url", outcome: "error" });
    const text = await (await fetch(`${base}/metrics`)).text();
    expect(text).toContain('threadline_runs_total{outcome="completed"} 1');
    expect(text).toContain('threadline_tool_calls_total{tool="fetch_url",outcome="error"} 1');
    expect(text).toContain("# TYPE threadline_steering_delivery_seconds histogram");
    expect((await fetch(`${base}/other`)).status).toBe(404);
  });
});
