import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { Cluster } from "ioredis";
import { freePort } from "../support/net.js";

const run = promisify(execFile);

/** Every redis-server any TestCluster started and has not stopped; killed when this process exits. */
const live = new Set<ChildProcess>();
process.on("exit", () => {
  for (const child of live) child.kill("SIGKILL");
});

/**
 * A real Redis Cluster of the test's own: `masters` redis-servers with `--cluster-enabled yes` on free
 * loopback ports (no persistence, config files in a temporary folder), joined with
 * `redis-cli --cluster create … --cluster-replicas 0`. `stop` kills every server and removes the folder; a
 * test process that exits without calling it still kills them.
 */
export class TestCluster {
  private constructor(
    readonly ports: number[],
    private readonly children: ChildProcess[],
    private readonly dir: string,
  ) {}

  /** Starts the servers, creates the cluster and resolves once every slot is served (`cluster_state:ok`). */
  static async start(masters = 3, options: { fullCoverage?: boolean } = {}): Promise<TestCluster> {
    const dir = mkdtempSync(join(tmpdir(), "tl-cluster-"));
    const ports: number[] = [];
    const children: ChildProcess[] = [];
    const cluster = new TestCluster(ports, children, dir);
    try {
      for (let i = 0; i < masters; i++) {
        const port = await freePort();
        ports.push(port);
        const child = spawn(
          "redis-server",
          [
            "--port",
            String(port),
            "--bind",
            "127.0.0.1",
            "--cluster-enabled",
            "yes",
            "--cluster-config-file",
            join(dir, `nodes-${port}.conf`),
            "--cluster-node-timeout",
            "2000",
            // `no`: the other masters keep serving their slots when one is down (a test that kills a node).
            "--cluster-require-full-coverage",
            options.fullCoverage === false ? "no" : "yes",
            "--dir",
            dir,
            "--save",
            "",
            "--appendonly",
            "no",
          ],
          { stdio: "ignore" },
        );
        live.add(child);
        child.once("exit", () => live.delete(child));
        children.push(child);
      }
      for (const port of ports) await waitFor(() => ping(port), `redis-server on ${port} answers PING`);
      await run("redis-cli", [
        "--cluster",
        "create",
        ...ports.map((port) => `127.0.0.1:${port}`),
        "--cluster-replicas",
        "0",
        "--cluster-yes",
      ]);
      for (const port of ports) await waitFor(() => clusterOk(port), `node ${port} reports cluster_state:ok`);
      return cluster;
    } catch (err) {
      await cluster.stop();
      throw err;
    }
  }

  /** `REDIS_CLUSTER_NODES` for these servers: every node, `127.0.0.1:<port>`, comma-separated. */
  get nodes(): string {
    return this.ports.map((port) => `127.0.0.1:${port}`).join(",");
  }

  /** A cluster client for the test itself (fails fast). Disconnect it when done. */
  client(): Cluster {
    return new Cluster(
      this.ports.map((port) => ({ host: "127.0.0.1", port })),
      { redisOptions: { maxRetriesPerRequest: 1 } },
    );
  }

  /** Kills the server on `port` (SIGKILL), as a node that crashed; resolves when it is gone. */
  async kill(port: number): Promise<void> {
    const child = this.children[this.ports.indexOf(port)];
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const gone = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGKILL");
    await gone;
  }

  /** Kills every server (SIGKILL) and removes the folder; resolves when they are gone. Idempotent. */
  async stop(): Promise<void> {
    await Promise.all(
      this.children.map((child) => {
        if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
        const gone = new Promise((resolve) => child.once("exit", resolve));
        child.kill("SIGKILL");
        return gone;
      }),
    );
    rmSync(this.dir, { recursive: true, force: true });
  }
}

async function ping(port: number): Promise<boolean> {
  return redisCli(port, ["PING"]).then((out) => out.trim() === "PONG");
}

async function clusterOk(port: number): Promise<boolean> {
  return redisCli(port, ["CLUSTER", "INFO"]).then((out) => out.includes("cluster_state:ok"));
}

function redisCli(port: number, args: string[]): Promise<string> {
  return run("redis-cli", ["-h", "127.0.0.1", "-p", String(port), ...args]).then(
    ({ stdout }) => stdout,
    () => "",
  );
}

async function waitFor(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
