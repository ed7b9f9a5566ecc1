import { Redis } from "ioredis";
import { runsConfigFromEnv } from "../../src/app/runs-config.js";
import type { ChatInbound, ChatUser } from "../../src/chat/index.js";
import { loadConfig } from "../../src/config/index.js";
import { createPlaygroundPlatform, playgroundThread } from "../../src/playground/index.js";
import {
  createGateway,
  createRunQueue,
  Intake,
  playgroundKeys,
  type RunQueue,
  type RunsConfig,
} from "../../src/runs/index.js";

/** One message as the playground handed it to its gateway, to hand over again. */
export interface ReplayedMessage {
  /** The playground thread id (`t-…`). */
  thread: string;
  /** The playground message id (`u-…`) the first delivery got. */
  id: string;
  author: ChatUser;
  /** The text without the mention, as the playground passes it on. */
  text: string;
  mentionsBot: boolean;
}

/**
 * A second gateway replica in the benchmark's own process, built like `threadline gateway` builds its own
 * (the same env and config module, so the same RunsConfig): `replay` hands it a message the real gateway
 * already received, with the same message id — what a platform retry or a reconnect replay delivered to
 * another replica looks like. Its connections retry forever (commands wait through a Redis restart).
 */
export class Replayer {
  private constructor(
    private readonly redis: Redis,
    private readonly bull: Redis,
    /** The runs queue (the audit reads its job counts). */
    readonly queue: RunQueue,
    private readonly inbound: ChatInbound,
    readonly config: RunsConfig,
  ) {}

  /** Builds the replica from the environment the gateway gets. @throws ConfigError on a bad env/config. */
  static async create(env: Record<string, string>): Promise<Replayer> {
    const loaded = await loadConfig({ env });
    const config = runsConfigFromEnv(loaded.env, loaded.config);
    const url = loaded.env.REDIS_URL ?? "redis://127.0.0.1:6379";
    const redis = new Redis(url, { maxRetriesPerRequest: null });
    const bull = new Redis(url, { maxRetriesPerRequest: null });
    for (const connection of [redis, bull]) connection.on("error", () => {});
    const outbound = createPlaygroundPlatform({ redis, keys: playgroundKeys(config.prefix) }).outbound;
    const queue = createRunQueue(bull, config.prefix);
    const inbound = createGateway({ intake: new Intake(redis, queue, config), outbound, config });
    return new Replayer(redis, bull, queue, inbound, config);
  }

  /** The runs connection (read-only use by the audit). */
  get connection(): Redis {
    return this.redis;
  }

  /** Hands `message` to the replica. @throws what the gateway throws (Redis down…); the caller retries. */
  async replay(message: ReplayedMessage): Promise<void> {
    await this.inbound.message({
      id: message.id,
      thread: playgroundThread(message.thread),
      author: message.author,
      text: message.text,
      attachments: [],
      mentionsBot: message.mentionsBot,
      sentAt: Date.now(),
    });
  }

  async close(): Promise<void> {
    await this.queue.close().catch(() => {});
    this.redis.disconnect();
    this.bull.disconnect();
  }
}
