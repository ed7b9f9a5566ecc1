import type { ChatPlatform } from "../chat/index.js";
import type { Env, ThreadlineConfig } from "../config/index.js";
import { createGateway, createRunQueue, Intake, type RunLogger, type RunsConfig } from "../runs/index.js";
import { restrictInbound } from "./access.js";
import { missingModelHint, modelSettingNames } from "./model-hint.js";
import { blockingConnection, commandConnection, type RedisClient, redisTarget } from "./redis.js";
import { runsConfigFromEnv } from "./runs-config.js";

export interface GatewayProcessOptions {
  env: Env;
  log: RunLogger;
  platforms: ChatPlatform[];
  /** The validated config module (runs settings, `allow` lists). Default `{}`. */
  config?: ThreadlineConfig;
  /**
   * The runs settings, built once by the composition root and shared with the worker and the platforms.
   * Default: `runsConfigFromEnv(env, config)`.
   */
  runsConfig?: RunsConfig;
  /**
   * The command connection to use (not closed by `close`); by default one is opened. Passing the one the
   * platforms use puts a message's storage and its run intake on one connection, applied in order.
   */
  redis?: RedisClient;
}

/** A running gateway: receives platform events and turns them into runs; never runs an agent. */
export interface GatewayProcess {
  intake: Intake;
  close(): Promise<void>;
}

export async function startGatewayProcess(options: GatewayProcessOptions): Promise<GatewayProcess> {
  const { env, log } = options;
  const target = redisTarget(env);
  const redis = options.redis ?? commandConnection(target);
  const bull = blockingConnection(target);
  const config = options.runsConfig ?? runsConfigFromEnv(env, options.config);
  const queue = createRunQueue(bull, env.THREADLINE_PREFIX);
  const intake = new Intake(redis, queue, config);
  const hint = missingModelHint(env);
  if (hint) log.warn({ setting: modelSettingNames(env) }, hint);
  for (const platform of options.platforms) {
    const gateway = createGateway({ intake, outbound: platform.outbound, config, log });
    await platform.start(
      restrictInbound(gateway, options.config?.allow, { outbound: platform.outbound, log }),
    );
    log.info({ platform: platform.platform }, "gateway receiving events");
  }
  return {
    intake,
    async close() {
      for (const platform of options.platforms) await platform.stop();
      await queue.close();
      if (!options.redis) redis.disconnect();
      bull.disconnect();
    },
  };
}
