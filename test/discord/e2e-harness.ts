import type { Redis } from "ioredis";
import type { AgentMessage } from "../../src/agent/index.js";
import { type ThreadRef, threadId } from "../../src/chat/index.js";
import { createRunQueue, type RunQueue, ThreadStore, threadKeys } from "../../src/runs/index.js";
import { FakeDiscordServer, type FakeMessage, type FakeUser } from "../fakes/discord-server.js";
import { gateKey } from "../fakes/discord-tools.js";
import { FakeOpenAIServer } from "../fakes/openai-server.js";
import { CliProcess } from "../support/process.js";
import { connect, redisEnv, requireRedis } from "../support/redis.js";
import { ScriptedE2E } from "../support/scripted-e2e.js";

/** Start-up of the processes (tsx compiles the sources on a possibly busy machine). */
const START_TIMEOUT_MS = 60_000;

export type { ModelStep } from "../support/scripted-e2e.js";

/** Options of {@link DiscordE2E.start}. */
export interface DiscordE2EOptions {
  /** Gateway processes, one per shard (default 1 process owning the only shard). */
  shards?: number;
  /** Extra environment for every process. */
  env?: Record<string, string>;
}

/**
 * A fake Discord and a fake model with the real `threadline gateway` (one process per shard) and
 * `threadline worker` running as separate processes against them and a real Redis. Guild `guild` is on
 * shard 0 (and `otherGuild` on shard 1 when sharded). Model replies are scripted per tag
 * ({@link ScriptedE2E}): each test mentions the bot with `[tN]`.
 */
export class DiscordE2E extends ScriptedE2E {
  readonly store: ThreadStore;
  private readonly queue: RunQueue;
  private readonly queueConnection: Redis = connect({ blocking: true });
  readonly guild: string;
  readonly otherGuild: string | undefined;
  readonly alice: FakeUser;
  readonly bob: FakeUser;
  gateways: CliProcess[] = [];
  worker!: CliProcess;

  private constructor(
    readonly discord: FakeDiscordServer,
    openai: FakeOpenAIServer,
    readonly shards: number,
  ) {
    super(openai, "discord");
    this.store = new ThreadStore(this.redis, this.prefix);
    this.queue = createRunQueue(this.queueConnection, this.prefix);
    this.guild = discord.addGuild("Acme", { id: 0, count: shards });
    this.otherGuild = shards > 1 ? discord.addGuild("Other", { id: 1, count: shards }) : undefined;
    const guilds = [this.guild, ...(this.otherGuild ? [this.otherGuild] : [])].map((guildId) => ({
      guildId,
    }));
    this.alice = discord.addUser("Alice", guilds);
    this.bob = discord.addUser("Bob", guilds);
  }

  static async start(options: DiscordE2EOptions = {}): Promise<DiscordE2E> {
    const discord = await FakeDiscordServer.start({ heartbeatIntervalMs: 2000 });
    const openai = await FakeOpenAIServer.start();
    const e2e = new DiscordE2E(discord, openai, options.shards ?? 1);
    await requireRedis(e2e.redis);
    const env = {
      DISCORD_TOKEN: discord.token,
      DISCORD_API_URL: discord.apiUrl,
      DISCORD_EDIT_INTERVAL_MS: "250",
      SLACK_BOT_TOKEN: "",
      SLACK_APP_TOKEN: "",
      SLACK_SIGNING_SECRET: "",
      OPS_PORT: "0",
      ...redisEnv(),
      THREADLINE_PREFIX: e2e.prefix,
      OPENAI_BASE_URL: openai.baseURL,
      OPENAI_API_KEY: "sk-test",
      OPENAI_MODEL: "fake-model",
      THREADLINE_TOOLS_MODULE: "test/fakes/discord-tools.ts",
      LOG_LEVEL: "info",
      ...options.env,
    };
    const shardEnv = (id: number) =>
      e2e.shards > 1 ? { DISCORD_SHARD_COUNT: String(e2e.shards), DISCORD_SHARD_IDS: String(id) } : {};
    const started = await Promise.allSettled([
      CliProcess.start("worker", env, "worker started", START_TIMEOUT_MS),
      ...Array.from({ length: e2e.shards }, (_, id) =>
        CliProcess.start(
          "gateway",
          { ...env, ...shardEnv(id) },
          "gateway receiving events",
          START_TIMEOUT_MS,
        ),
      ),
    ]);
    const failed = started.find((result) => result.status === "rejected");
    const processes = started.flatMap((result) => (result.status === "fulfilled" ? [result.value] : []));
    if (failed) {
      await Promise.all(processes.map((proc) => proc.stop()));
      await Promise.all([discord.close(), openai.close(), e2e.queue.close()]);
      e2e.redis.disconnect();
      e2e.queueConnection.disconnect();
      throw failed.reason;
    }
    e2e.worker = processes[0]!;
    e2e.gateways = processes.slice(1);
    return e2e;
  }

  /** A new text channel of `guild` (each test gets its own, so rate-limit windows do not add up). */
  channel(guildId = this.guild): string {
    return this.discord.addChannel(guildId, `test-${this.tagSeq}`);
  }

  /** `user` (Alice) mentions the bot with the tag in `channelId`. */
  mention(channelId: string, tag: string, text: string, user = this.alice): FakeMessage {
    return this.discord.say(channelId, user, `[${tag}] ${text}`, { mention: true });
  }

  /** The thread a mention in a text channel started (same id as the message). */
  threadRef(mention: FakeMessage, channelId: string, guildId = this.guild): ThreadRef {
    return { platform: "discord", workspace: guildId, channel: channelId, thread: mention.id };
  }

  /** Resolves once the bot posted a message containing `text` in `channelId`; returns it. */
  async waitForText(channelId: string, text: string): Promise<FakeMessage> {
    const find = () => this.discord.botMessages(channelId).find((message) => message.content.includes(text));
    await this.discord.waitFor(() => find() !== undefined);
    return find()!;
  }

  /** Resolves once the bot's reactions on a message are exactly `emoji` (Unicode, in any order). */
  async waitForReactions(messageId: string, emoji: string[]): Promise<void> {
    const wanted = emoji
      .map((e) => e.replaceAll("\uFE0F", ""))
      .sort()
      .join(" ");
    await this.discord.waitFor(() => this.discord.botReactions(messageId).sort().join(" ") === wanted);
  }

  /** Resolves once no run holds the thread and its last run's final message is posted. */
  async waitForIdle(thread: ThreadRef): Promise<void> {
    const lease = threadKeys(this.prefix, threadId(thread)).lease;
    await this.until("the thread to be idle", async () => (await this.redis.exists(lease)) === 0);
  }

  /** Lets the `gate` tool call with `value` finish. */
  async openGate(value: string): Promise<void> {
    await this.redis.set(gateKey(this.prefix, value), "1", "EX", 600);
  }

  /** The intake state of a message (queued, delivered, withdrawn, …) and its stored body. */
  async queued(thread: ThreadRef, messageId: string): Promise<{ state: string | null; body: string | null }> {
    const keys = threadKeys(this.prefix, threadId(thread));
    const [state, body] = await Promise.all([
      this.redis.hget(keys.state, messageId),
      this.redis.hget(keys.body, messageId),
    ]);
    return { state, body };
  }

  /**
   * Resolves once `count` runs of the thread whose channel is `threadChannelId` have completed (a run's
   * job completes after its last chat update), then returns the visible bot message containing `text`.
   */
  async waitForRuns(threadChannelId: string, count: number, text: string): Promise<FakeMessage> {
    await this.until(`${count} finished run(s) in ${threadChannelId}`, async () => {
      const jobs = await this.queue.getJobs(["completed"]);
      return jobs.filter((job) => job.data.threadId.endsWith(`:${threadChannelId}`)).length >= count;
    });
    const message = this.discord
      .botMessages(threadChannelId)
      .find((candidate) => candidate.content.includes(text));
    if (!message) throw new Error(`no bot message with "${text}" in ${threadChannelId}`);
    return message;
  }

  async transcript(thread: ThreadRef): Promise<AgentMessage[]> {
    return this.store.loadTranscript(threadId(thread));
  }

  async close(): Promise<void> {
    await Promise.all([...this.gateways.map((gateway) => gateway.stop()), this.worker?.stop()]);
    await this.queue.close();
    this.queueConnection.disconnect();
    await this.discord.close();
    await this.closeShared();
  }
}

export { toolResults, userTexts } from "../support/model-requests.js";
