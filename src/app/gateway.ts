import type { ChatPlatform } from "../chat/index.js";
import type { Env } from "../config/index.js";
import { createGateway, createRunQueue, Intake, type RunLogger, runsConfig } from "../runs/index.js";
import { blockingConnection, commandConnection } from "./redis.js";

export interface GatewayProcessOptions {
  env: Env;
  log: RunLogger;
  platforms: ChatPlatform[];
}

/** A running gateway: receives platform events and turns them into runs; never runs an agent. */
export interface GatewayProcess {
  intake: Intake;
  close(): Promise<void>;
}

export async function startGatewayProcess(options: GatewayProcessOptions): Promise<GatewayProcess> {
  const { env, log } = options;
  const redisUrl = env.REDIS_URL ?? "redis://127.0.0.1:6379";
  const redis = commandConnection(redisUrl);
  const bull = blockingConnection(redisUrl);
  const config = runsConfig({ prefix: env.THREADLINE_PREFIX });
  const queue = createRunQueue(bull, env.THREADLINE_PREFIX);
  const intake = new Intake(redis, queue, config);
  for (const platform of options.platforms) {
    await platform.start(createGateway({ intake, outbound: platform.outbound, config, log }));
    log.info({ platform: platform.platform }, "gateway receiving events");
  }
  return {
    intake,
    async close() {
      for (const platform of options.platforms) await platform.stop();
      await queue.close();
      redis.disconnect();
      bull.disconnect();
    },
  };
}
