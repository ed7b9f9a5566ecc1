import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../support/net.js";
import { CliProcess } from "../support/process.js";
import { connect, deletePrefix, redisEnv, requireRedis, uniquePrefix } from "../support/redis.js";

const run = promisify(execFile);
const ROOT = new URL("../../", import.meta.url).pathname;

/** What the Docker image runs: `npm run build`, then `node dist/app/cli.js start`. */
describe("the production build", () => {
  const prefix = uniquePrefix("build");
  const redis = connect();
  let app: CliProcess | undefined;
  let ports: { playground: number; ops: number };

  beforeAll(async () => {
    await requireRedis(redis);
    await run("npm", ["run", "build", "--silent"], { cwd: ROOT });
    ports = { playground: await freePort(), ops: await freePort() };
    app = await CliProcess.start(
      "start",
      {
        ...redisEnv(),
        THREADLINE_PREFIX: prefix,
        PLAYGROUND_PORT: String(ports.playground),
        OPS_PORT: String(ports.ops),
        DASHBOARD: "true",
        DASHBOARD_PASSWORD: "local-test-password",
        LOG_LEVEL: "info",
      },
      "gateway receiving events",
      60_000,
      "build",
    );
  }, 120_000);

  afterAll(async () => {
    await app?.stop();
    await deletePrefix(redis, prefix);
    redis.disconnect();
  }, 30_000);

  it("starts: the playground page and its scripts, /healthz, /metrics and the password-protected dashboard", async () => {
    const page = await fetch(`http://127.0.0.1:${ports.playground}/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain("<script");
    expect((await fetch(`http://127.0.0.1:${ports.playground}/static/app.js`)).status).toBe(200);
    const ops = `http://127.0.0.1:${ports.ops}`;
    expect(await (await fetch(`${ops}/healthz`)).json()).toEqual({ status: "ok" });
    expect(await (await fetch(`${ops}/metrics`)).text()).toContain("threadline_runs_active 0");
    expect((await fetch(`${ops}/dashboard`)).status).toBe(401);
    const auth = `Basic ${Buffer.from("ops:local-test-password").toString("base64")}`;
    const queues = await fetch(`${ops}/dashboard/api/queues`, { headers: { authorization: auth } });
    expect(queues.status).toBe(200);
    expect(JSON.stringify(await queues.json())).toContain('"name":"runs"');
  });
});
