import { describe, expect, it } from "vitest";
import { parseEnv } from "../../src/app/env.js";

describe("process settings in the environment", () => {
  it("default to 200 runs per worker and an ops server on every interface of port 9464", () => {
    const env = parseEnv({});
    expect(env.WORKER_CONCURRENCY).toBe(200);
    expect(env.OPS_PORT).toBe(9464);
    expect(env.OPS_HOST).toBeUndefined();
    expect([env.DASHBOARD, env.DASHBOARD_READ_ONLY, env.DASHBOARD_PASSWORD]).toEqual([
      false,
      true,
      undefined,
    ]);
  });

  it("read OPS_HOST, a worker concurrency and the dashboard settings", () => {
    const env = parseEnv({
      OPS_HOST: "127.0.0.1",
      WORKER_CONCURRENCY: "500",
      DASHBOARD: "true",
      DASHBOARD_PASSWORD: "secret",
      DASHBOARD_READ_ONLY: "false",
    });
    expect(env).toMatchObject({
      OPS_HOST: "127.0.0.1",
      WORKER_CONCURRENCY: 500,
      DASHBOARD: true,
      DASHBOARD_PASSWORD: "secret",
      DASHBOARD_READ_ONLY: false,
    });
  });

  it("refuse ports beyond 65535 with a clear message", () => {
    expect(() => parseEnv({ PORT: "70000" })).toThrow(
      "PORT must be a port number (1–65535), for example 3000",
    );
    expect(() => parseEnv({ PLAYGROUND_PORT: "70000" })).toThrow(
      "PLAYGROUND_PORT must be a port number (1–65535), for example 3001",
    );
  });
});
