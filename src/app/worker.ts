import { UnrecoverableError } from "bullmq";
import type { ChatPlatform } from "../chat/index.js";
import type { Env } from "../config/index.js";
import { type AgentSetup, type RunLogger, runsConfig, startRunWorker } from "../runs/index.js";
import { agentSetupFromEnv } from "./agent-setup.js";
import { byPlatform } from "./platforms.js";
import { blockingConnection, commandConnection } from "./redis.js";

export interface WorkerProcessOptions {
  env: Env;
  log: RunLogger;
  platforms: ChatPlatform[];
  /** Replaces the agent built from the environment (tests, custom setups). */
  agent?: AgentSetup;
  concurrency?: number;
}

/** A running worker: executes runs from the queue; posts to chats through REST only. */
export interface WorkerProcess {
  /** Stops taking jobs and waits for the running ones (BullMQ's close), then closes connections. */
  close(): Promise<void>;
}

export async function startWorkerProcess(options: WorkerProcessOptions): Promise<WorkerProcess> {
  const { env, log } = options;
  const redisUrl = env.REDIS_URL ?? "redis://127.0.0.1:6379";
  const redis = commandConnection(redisUrl);
  const bull = blockingConnection(redisUrl);
  const platforms = byPlatform(options.platforms);
  const handle = await startRunWorker({
    redis,
    bullConnection: bull,
    config: runsConfig({ prefix: env.THREADLINE_PREFIX }),
    outbound: (thread) => {
      const platform = platforms.get(thread.platform);
      if (!platform)
        throw new UnrecoverableError(`No ${thread.platform} credentials are configured on this worker`);
      return platform.outbound;
    },
    agent: options.agent ?? agentSetupFromEnv(env),
    concurrency: options.concurrency ?? env.WORKER_CONCURRENCY,
    log,
  });
  log.info({ concurrency: options.concurrency ?? env.WORKER_CONCURRENCY }, "worker started");
  return {
    async close() {
      await handle.close();
      redis.disconnect();
      bull.disconnect();
    },
  };
}
