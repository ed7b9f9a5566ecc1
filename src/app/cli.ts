#!/usr/bin/env node
import { Command, InvalidArgumentError } from "commander";
import "dotenv/config";
import { ConfigError, type LoadedConfig } from "../config/index.js";
import {
  DataFolderInUseError,
  type EmbeddedRedis,
  RedisNotInstalledError,
  startEmbeddedRedis,
} from "./embedded-redis.js";
import { type Env, loadSettings as loadEnvAndConfig } from "./env.js";
import { startGatewayProcess } from "./gateway.js";
import { type Closable, Lifecycle } from "./lifecycle.js";
import { createLogger } from "./logger.js";
import { Metrics } from "./metrics.js";
import { serveOps } from "./ops-server.js";
import { createPlatforms, platformCredentials } from "./platforms.js";
import { commandConnection, redisTarget } from "./redis.js";
import { runsConfigFromEnv } from "./runs-config.js";
import { startTracing } from "./tracing.js";
import { startWorkerProcess } from "./worker.js";

function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new InvalidArgumentError("must be a whole number greater than 0");
  return n;
}

/** Environment + config module; on problems, prints them all (no stack trace) and exits with 2. */
async function loadSettings(): Promise<LoadedConfig<Env>> {
  try {
    return await loadEnvAndConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
}

/** The part of a worker's shutdown time its running runs get to finish; the rest is for aborting them. */
function graceFor(leftMs: number): number {
  return Math.max(0, leftMs - Math.min(5000, leftMs / 4));
}

/** Stderr and exit 2 for start-up problems the operator fixes (no Redis to run, a folder in use). */
function exitOnSetupError(err: unknown): never {
  if (err instanceof RedisNotInstalledError || err instanceof DataFolderInUseError) {
    process.stderr.write(`${err.message}\n`);
    process.exit(2);
  }
  throw err;
}

async function run(roles: { gateway: boolean; worker: boolean }, concurrency?: number): Promise<void> {
  const { env, config: settings, configPath } = await loadSettings();
  const log = createLogger(env.LOG_LEVEL, { pid: process.pid });
  // Before anything starts: a signal while starting must not leave a private redis-server behind.
  const lifecycle = new Lifecycle({ log, deadlineMs: env.SHUTDOWN_TIMEOUT_MS });
  lifecycle.listen();
  if (configPath) log.info({ configPath }, "config module loaded");
  // The OpenTelemetry SDK is loaded only when OTEL_EXPORTER_OTLP_ENDPOINT is set.
  const service =
    roles.gateway && roles.worker ? "threadline" : `threadline-${roles.gateway ? "gateway" : "worker"}`;
  const tracing = await startTracing(process.env, service);
  if (tracing) log.info({ service }, "tracing on: spans go to the OTLP endpoint");
  let embedded: EmbeddedRedis | undefined;
  if (!env.REDIS_URL && !env.REDIS_CLUSTER_NODES && roles.gateway && roles.worker) {
    // All-in-one without REDIS_URL: a private redis-server with persistence in ./.threadline/redis.
    embedded = await startEmbeddedRedis().catch(exitOnSetupError);
    const own = embedded;
    lifecycle.atExit(() => own.stopNow());
    env.REDIS_URL = own.url;
    log.info(
      { url: own.url, dir: own.dir, pid: own.pid },
      own.reused
        ? "no REDIS_URL set: reusing the private redis-server an earlier start left running"
        : "no REDIS_URL set: started a private redis-server",
    );
  }
  const started: Closable[] = [];
  let connection: Closable;
  try {
    connection = await startParts(roles, { env, settings, log, parts: started, concurrency });
  } catch (err) {
    // Nothing started so far may outlive the failure: the private redis-server above all.
    for (const part of started.reverse()) await part.close(0).catch(() => {});
    await embedded?.stop();
    throw err;
  }
  // The gateway stops taking events first, then the worker lets its runs finish, then the ops server,
  // the shared connection and, last, the private redis-server they all use.
  for (const part of started.reverse()) lifecycle.add(part);
  lifecycle.add(connection);
  const own = embedded;
  if (own) lifecycle.add({ close: () => own.stop() });
  // Last: the spans of the runs that finished while shutting down are exported too.
  if (tracing) lifecycle.add({ close: () => tracing.shutdown() });
  lifecycle.started();
}

/**
 * Starts the ops server, the worker and the gateway of `roles`, pushing each onto `parts` as it starts;
 * returns the shared Redis connections, to close after them.
 */
async function startParts(
  roles: { gateway: boolean; worker: boolean },
  ctx: {
    env: Env;
    settings: LoadedConfig["config"];
    log: ReturnType<typeof createLogger>;
    parts: Closable[];
    concurrency: number | undefined;
  },
): Promise<Closable> {
  const { env, settings, log, parts, concurrency } = ctx;
  const redis = commandConnection(redisTarget(env));
  // The platforms' rate limits on a connection of their own: a reaction's budget check never waits
  // behind a burst of intake scripts or a worker's run writes on `redis` (issue #17).
  const limits = commandConnection(redisTarget(env));
  const disconnect = () => {
    redis.disconnect();
    limits.disconnect();
  };
  try {
    // The one RunsConfig of this process: the worker, the gateway and the platforms all get this one.
    const config = runsConfigFromEnv(env, settings);
    const metrics = new Metrics();
    if (env.OPS_PORT > 0) {
      const healthy = async () => (await redis.ping()) === "PONG";
      // Loopback unless OPS_HOST says otherwise, as the playground: metrics and the dashboard stay private.
      const host = env.OPS_HOST ?? "127.0.0.1";
      try {
        parts.push(await serveOps({ env, metrics, healthy, log, withDashboard: roles.gateway, host }));
      } catch (err) {
        // One line (the CLI prints it and exits 1), as for the playground's port.
        const code = (err as NodeJS.ErrnoException).code;
        throw new Error(
          code === "EADDRINUSE"
            ? `ops: port ${env.OPS_PORT} on ${host} is in use; set OPS_PORT to a free port (0 turns /healthz and /metrics off)`
            : `ops: cannot listen on ${host}:${env.OPS_PORT} (${(err as Error).message}); check OPS_HOST and OPS_PORT`,
        );
      }
    } else if (env.DASHBOARD && roles.gateway) {
      log.warn(
        { setting: "OPS_PORT" },
        "DASHBOARD is on but OPS_PORT=0 turns the ops server off: no dashboard",
      );
    }
    // Built once: in `start` the worker posts through the same adapters the gateway receives with.
    const platforms = await createPlatforms({
      env,
      redis,
      limits,
      log,
      role: roles.gateway ? "gateway" : "worker",
      config,
      observer: metrics.platformObserver(),
      settings,
    });
    if (roles.worker) {
      const options: Parameters<typeof startWorkerProcess>[0] = {
        env,
        log,
        platforms,
        config: settings,
        runsConfig: config,
        observer: metrics.observer(),
      };
      if (concurrency !== undefined) options.concurrency = concurrency;
      const worker = await startWorkerProcess(options);
      metrics.sampleRuns(worker);
      parts.push({
        close: (leftMs) => {
          const graceMs = graceFor(leftMs);
          // Half of what the grace leaves for the rest of the shutdown, at most 3 s.
          return worker.close({ graceMs, settleMs: Math.min(3000, (leftMs - graceMs) / 2) });
        },
      });
    }
    if (roles.gateway) {
      if (platforms.length === 0)
        log.warn({}, `no chat platform is configured (set ${platformCredentials()})`);
      parts.push(
        await startGatewayProcess({ env, log, platforms, config: settings, runsConfig: config, redis }),
      );
    }
  } catch (err) {
    disconnect();
    throw err;
  }
  return { close: async () => disconnect() };
}

const program = new Command()
  .name("threadline")
  .description("Every chat thread becomes a tool-using AI agent you can steer while it works.");

program
  .command("start", { isDefault: true })
  .description("gateway and worker in one process")
  .action(() => run({ gateway: true, worker: true }));
program
  .command("gateway")
  .description("receive Slack/Discord events and start runs (no agents run here)")
  .action(() => run({ gateway: true, worker: false }));
program
  .command("worker")
  .description("execute runs from the queue")
  .option("-c, --concurrency <n>", "runs held at once", positiveInt)
  .action((options: { concurrency?: number }) => run({ gateway: false, worker: true }, options.concurrency));

program
  .command("doctor")
  .description("check the configuration, Redis, the model endpoint, Slack and Discord, and say what to fix")
  .action(async () => {
    let loaded: LoadedConfig<Env>;
    try {
      loaded = await loadEnvAndConfig();
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      process.stdout.write(`✗ Configuration\n${err.message}\n`);
      process.exit(1);
    }
    process.stdout.write(`✓ Configuration: valid${loaded.configPath ? ` (${loaded.configPath})` : ""}\n`);
    // Loaded on demand: the doctor reaches every platform's client library.
    const { formatDoctorReport, runDoctor } = await import("./doctor.js");
    const checks = await runDoctor(loaded.env);
    // The caps and limits in force, so an operator sees what a run may spend before one does.
    const { describeLimits, formatLimits } = await import("./limits-report.js");
    process.stdout.write(`${formatLimits(describeLimits(runsConfigFromEnv(loaded.env, loaded.config)))}\n`);
    process.stdout.write(`${formatDoctorReport(checks)}\n`);
    process.exit(checks.every((check) => check.ok) ? 0 : 1);
  });

await program.parseAsync().catch((err: unknown) => {
  // A start-up failure (port taken, Redis unreachable, a tools module that throws) is one line, not a trace.
  const message = err instanceof Error ? err.message : String(err);
  process.stderr.write(`threadline: ${message}\n`);
  process.exit(1);
});
