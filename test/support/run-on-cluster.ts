/**
 * `npm run test:cluster`: the Redis-backed suites once more, against a real three-node Redis Cluster of
 * their own (`redis-server --cluster-enabled yes`, joined with `redis-cli --cluster create`). The suites
 * reach it through `REDIS_CLUSTER_NODES` (see `./redis.ts`), their child gateways and workers too; tests
 * that restart or cut off one Redis on purpose keep their private single server and are left out.
 * Extra arguments go to vitest (e.g. `--reporter verbose`); paths under `test/` given there replace the
 * list below (`npm run test:cluster -- test/slack/ack-first.test.ts`).
 */
import { spawn } from "node:child_process";
import { TestCluster } from "../app/redis-cluster.js";

/** What runs on the cluster: the run machinery and every end-to-end suite with separate processes. */
const SUITES = [
  "test/runs",
  "test/slack",
  "test/discord",
  "test/playground/start.test.ts",
  "test/playground/parallel-tool-calls.test.ts",
  "test/playground/allow-list.test.ts",
];

/** Suites that need one server of their own (they restart it, or kill it mid-run). */
const SINGLE_SERVER_ONLY = ["**/intake-durability.test.ts", "**/chaos.test.ts", "**/intake-retry.test.ts"];

const cluster = await TestCluster.start(3);
console.log(`test:cluster: Redis Cluster at ${cluster.nodes}`);
const env: NodeJS.ProcessEnv = { ...process.env, REDIS_CLUSTER_NODES: cluster.nodes };
delete env.REDIS_URL;
const extra = process.argv.slice(2);
const chosen = extra.filter((arg) => arg.startsWith("test/"));
const suites = chosen.length > 0 ? chosen : SUITES;
const options = extra.filter((arg) => !chosen.includes(arg));
const args = ["vitest", "run", ...suites, ...SINGLE_SERVER_ONLY.flatMap((glob) => ["--exclude", glob])];
const child = spawn("npx", [...args, ...options], { env, stdio: "inherit" });
const code = await new Promise<number>((resolve) => child.once("exit", (status) => resolve(status ?? 1)));
await cluster.stop();
process.exit(code);
