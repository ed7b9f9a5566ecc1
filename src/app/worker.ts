import { UnrecoverableError } from "bullmq";
import { type ChatOutbound, type ChatPlatform, watchApprovals } from "../chat/index.js";
import type { Env, ThreadlineConfig } from "../config/index.js";
import {
  type AgentSetup,
  type RunLogger,
  type RunObserver,
  type RunsConfig,
  startRunWorker,
  ThreadStore,
} from "../runs/index.js";
import type { AnyToolDefinition } from "../tools/index.js";
import { agentSetupFromEnv } from "./agent-setup.js";
import { connectConfiguredMcpServers } from "./mcp.js";
import type { RunsSampler } from "./metrics.js";
import { byPlatform } from "./platforms.js";
import { blockingConnection, commandConnection, redisTarget } from "./redis.js";
import { runsConfigFromEnv } from "./runs-config.js";
import { checkShellSandbox } from "./shell-sandbox.js";
import { loadToolsModule } from "./tools-module.js";

export interface WorkerProcessOptions {
  env: Env;
  log: RunLogger;
  platforms: ChatPlatform[];
  /** Replaces the agent built from the environment (tests, custom setups). */
  agent?: AgentSetup;
  /** The validated config module (tools, MCP servers, model and runs settings). Default `{}`. */
  config?: ThreadlineConfig;
  /**
   * The runs settings, built once by the composition root and shared with the gateway and the platforms.
   * Default: `runsConfigFromEnv(env, config)`.
   */
  runsConfig?: RunsConfig;
  concurrency?: number;
  /** Receives run events (metrics). */
  observer?: RunObserver;
}

/**
 * A running worker: executes runs from the queue; posts to chats through REST only. It is the
 * {@link RunsSampler} of its process's run gauges (`Metrics.sampleRuns`).
 */
export interface WorkerProcess extends RunsSampler {
  /**
   * Stops taking jobs and lets the running ones finish for up to `graceMs` (default 30 s); runs still going
   * then are aborted, their jobs left for another worker to resume. Then waits up to `settleMs` (default
   * 3 s) for the chat writes those runs left to the background (Slack's agent-session statuses: a run's
   * last `active` may still wait for its Tier 3 budget), and closes connections.
   */
  close(options?: { graceMs?: number; settleMs?: number }): Promise<void>;
}

export async function startWorkerProcess(options: WorkerProcessOptions): Promise<WorkerProcess> {
  const { env, log } = options;
  const target = redisTarget(env);
  const redis = commandConnection(target);
  const bull = blockingConnection(target);
  const platforms = byPlatform(options.platforms);
  // The shell tool is offered only with a working sandbox (or the operator's explicit "none").
  const config = options.agent
    ? (options.config ?? {})
    : (await checkShellSandbox(env, options.config ?? {}, log)).config;
  // MCP servers start before the worker takes jobs; one that fails is logged and skipped.
  const mcp = options.agent ? undefined : await connectConfiguredMcpServers(config, log);
  const agent =
    options.agent ??
    agentSetupFromEnv(env, await toolsFromEnv(env), { config, mcpTools: mcp?.tools ?? [], log });
  const handle = await startRunWorker({
    redis,
    bullConnection: bull,
    config: options.runsConfig ?? runsConfigFromEnv(env, config),
    outbound: (thread) => {
      const platform = platforms.get(thread.platform);
      if (!platform)
        throw new UnrecoverableError(`No ${thread.platform} credentials are configured on this worker`);
      // One wrapper per run: its renderer learns of the approval cards its gate posts.
      return watchApprovals(platform.outbound);
    },
    agent,
    concurrency: options.concurrency ?? env.WORKER_CONCURRENCY,
    log,
    ...(options.observer ? { observer: options.observer } : {}),
  });
  log.info({ concurrency: options.concurrency ?? env.WORKER_CONCURRENCY }, "worker started");
  const store = new ThreadStore(redis, env.THREADLINE_PREFIX);
  return {
    activeThreadIds: () => handle.activeThreadIds(),
    inboxDepth: (threadIds) => store.inboxDepth(threadIds),
    async close(closeOptions = {}) {
      await handle.close(closeOptions.graceMs === undefined ? {} : { graceMs: closeOptions.graceMs });
      const unsettled = await settledWithin(options.platforms, closeOptions.settleMs ?? DEFAULT_SETTLE_MS);
      if (unsettled.length > 0) {
        log.warn(
          { platforms: unsettled },
          "worker closed with chat writes still queued (agent-session statuses)",
        );
      }
      await mcp?.close();
      redis.disconnect();
      bull.disconnect();
    },
  };
}

/** How long a closing worker waits for its outbounds' background writes by default. */
const DEFAULT_SETTLE_MS = 3000;

/**
 * Awaits every platform outbound's {@link ChatOutbound.settled} for up to `ms`; returns the platforms whose
 * writes were still going then.
 */
async function settledWithin(platforms: readonly ChatPlatform[], ms: number): Promise<string[]> {
  const pending = new Set<string>();
  const waits = platforms.flatMap((platform) => {
    const settled = platform.outbound.settled?.();
    if (!settled) return [];
    pending.add(platform.platform);
    // A write that failed is over too (the contract says it never rejects; a close must not throw for it).
    const over = () => pending.delete(platform.platform);
    return [settled.then(over, over)];
  });
  if (waits.length === 0) return [];
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  await Promise.race([Promise.all(waits), timeout]);
  clearTimeout(timer);
  return [...pending];
}

/** The tools of `THREADLINE_TOOLS_MODULE`, or none. */
async function toolsFromEnv(env: Env): Promise<AnyToolDefinition[]> {
  return env.THREADLINE_TOOLS_MODULE ? loadToolsModule(env.THREADLINE_TOOLS_MODULE) : [];
}
