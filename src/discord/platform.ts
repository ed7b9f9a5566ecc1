import { once } from "node:events";
import { Client, Events, GatewayIntentBits, Options, Partials } from "discord.js";
import { type AccessInput, type ChatInbound, type ChatPlatform, normalizeAccess } from "../chat/index.js";
import { type DiscordAccess, OPEN_ACCESS } from "./access.js";
import type { HistoryLimits } from "./history.js";
import { inviteUrl } from "./invite.js";
import { type DiscordLogger, SILENT_DISCORD_LOGGER } from "./logger.js";
import { DiscordOutbound } from "./outbound.js";
import { DiscordReceiver } from "./receiver.js";
import { createDiscordRest, discordRestOptions } from "./rest.js";
import type { RestBudget } from "./rest-budget.js";

/** Which gateway shards this process runs. */
export interface DiscordShards {
  /** Total shards of the bot (the same in every gateway process). */
  count: number;
  /** The shard ids this process owns; default all of `0 … count-1`. */
  ids?: readonly number[];
}

/** Options of {@link createDiscordPlatform}. */
export interface DiscordPlatformOptions {
  /** The bot token. */
  token: string;
  /**
   * REST base URL (default Discord's `https://discord.com/api`). Every client the adapter creates uses it,
   * and the gateway URL comes from its `GET /gateway/bot`, so the bot can run against a local server.
   */
  apiUrl?: string;
  /** The global REST budget shared by all processes of the bot. */
  budget: RestBudget;
  /** Default: one shard. */
  shards?: DiscordShards;
  /**
   * Default: everyone, everywhere. The old spelling `allowDMs` of `directMessages` is still read, with a
   * deprecation warning in the log when the gateway starts.
   */
  access?: AccessInput<DiscordAccess>;
  /** Minimum interval between edits of a streamed message; default 1,000 ms. */
  minEditIntervalMs?: number;
  historyLimits?: HistoryLimits;
  log?: DiscordLogger;
}

/**
 * The gateway intents the features need: guilds (channels and threads in the cache), guild and direct
 * messages with their content (privileged: enable "Message Content Intent" for the application), and
 * reactions in both.
 */
export const DISCORD_INTENTS = [
  GatewayIntentBits.Guilds,
  GatewayIntentBits.GuildMessages,
  GatewayIntentBits.MessageContent,
  GatewayIntentBits.GuildMessageReactions,
  GatewayIntentBits.DirectMessages,
  GatewayIntentBits.DirectMessageReactions,
];

/** A Discord {@link ChatPlatform} with its outbound and, once started, its gateway client. */
export interface DiscordPlatform extends ChatPlatform {
  readonly outbound: DiscordOutbound;
  /** The invite URL, known once the gateway is ready (the application id comes with it). */
  readonly inviteUrl: string | undefined;
}

/**
 * The Discord adapter. Workers use `outbound` only: REST calls, no gateway connection. `start` (gateway
 * processes) logs in with discord.js on the configured shards — messages are not cached (the events
 * carry everything; partials make reactions, edits and deletions of uncached messages visible), so a
 * replayed event reaches the gateway logic again and is deduplicated there by message id — and resolves
 * once the client is ready; the invite URL is logged then. `stop` destroys the client; idempotent.
 */
export function createDiscordPlatform(options: DiscordPlatformOptions): DiscordPlatform {
  const log = options.log ?? SILENT_DISCORD_LOGGER;
  const restOptions = { budget: options.budget, ...(options.apiUrl ? { apiUrl: options.apiUrl } : {}) };
  const rest = createDiscordRest({ ...restOptions, token: options.token });
  const outbound = new DiscordOutbound({
    rest,
    log,
    ...(options.minEditIntervalMs !== undefined ? { minEditIntervalMs: options.minEditIntervalMs } : {}),
  });
  let client: Client | undefined;
  let invite: string | undefined;

  return {
    platform: "discord",
    outbound,
    get inviteUrl() {
      return invite;
    },
    async start(inbound: ChatInbound) {
      if (client) throw new Error("The Discord gateway client is already started");
      client = new Client({
        intents: DISCORD_INTENTS,
        partials: [
          Partials.Channel,
          Partials.Message,
          Partials.Reaction,
          Partials.User,
          Partials.GuildMember,
        ],
        makeCache: Options.cacheWithLimits({
          ...Options.DefaultMakeCacheSettings,
          MessageManager: 0,
          GuildMemberManager: {
            maxSize: 1000,
            keepOverLimit: (member) => member.id === member.client.user.id,
          },
        }),
        allowedMentions: { parse: [] },
        rest: discordRestOptions(restOptions),
        ...shardOptions(options.shards),
      });
      client.on(Events.Error, (err) => log.error({ err }, "discord: client error"));
      client.on(Events.ShardReconnecting, (shard) => log.info({ shard }, "discord: shard reconnecting"));
      client.on(Events.ShardResume, (shard, replayed) =>
        log.info({ shard, replayed }, "discord: shard resumed"),
      );
      new DiscordReceiver({
        client,
        rest,
        inbound,
        access: options.access ? normalizeAccess(options.access, log, "discord") : OPEN_ACCESS,
        log,
        ...(options.historyLimits ? { historyLimits: options.historyLimits } : {}),
      }).attach();
      const ready = once(client, Events.ClientReady);
      await client.login(options.token);
      await ready;
      invite = client.application ? inviteUrl(client.application.id) : undefined;
      log.info(
        {
          bot: client.user?.tag,
          shards: client.options.shards,
          shardCount: client.options.shardCount,
          invite,
        },
        "discord: gateway ready; invite the bot with the URL in `invite`",
      );
    },
    async stop() {
      outbound.close();
      const running = client;
      client = undefined;
      await running?.destroy();
    },
  };
}

function shardOptions(shards: DiscordShards | undefined): { shards?: number[]; shardCount?: number } {
  if (!shards) return {};
  const ids = shards.ids ?? Array.from({ length: shards.count }, (_, index) => index);
  return { shards: [...ids], shardCount: shards.count };
}
