import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Cluster, Redis } from "ioredis";
import {
  type ChatInbound,
  type ChatPlatform,
  DEFAULT_REACTIONS,
  EMOJI_BY_NAME,
  REACTION_ROLES,
  type ReactionNames,
} from "../chat/index.js";
import { PlaygroundActions } from "./api.js";
import type { PlaygroundKeys } from "./keys.js";
import { LiveUpdates } from "./live.js";
import { PLAYGROUND_BOT, PlaygroundOutbound } from "./outbound.js";
import { createPlaygroundServer, type PlaygroundLogger } from "./server.js";
import { PlaygroundStore } from "./store.js";

/** Options of {@link createPlaygroundPlatform}. */
export interface PlaygroundPlatformOptions {
  /**
   * A Redis command connection, shared with the caller (not closed by `stop`). The gateway's server
   * also opens one subscriber connection with `redis.duplicate()` for live updates, closed by `stop`.
   */
  redis: Redis | Cluster;
  /**
   * Its Redis keys (`playgroundKeys(THREADLINE_PREFIX)` from `src/runs/keys.ts`); gateways and workers must
   * agree on them.
   */
  keys: PlaygroundKeys;
  /** Port the gateway serves on. Default 3000; `0` picks a free port (see {@link PlaygroundPlatform.url}). */
  port?: number;
  /**
   * Interface to bind. Default `127.0.0.1` (the playground has no login: keep it local). Whatever the
   * interface, requests must be addressed to `localhost` / `127.0.0.1` / `[::1]` or to `allowedHosts`
   * (no DNS rebinding, no posts from other sites).
   */
  host?: string;
  /** More host names it answers to: `name` (at its port) or `name:port`. Default none. */
  allowedHosts?: readonly string[];
  /** The reaction vocabulary the page offers and shows. Default {@link DEFAULT_REACTIONS}. */
  reactions?: ReactionNames;
  /** A setup problem the page shows as a banner (e.g. that no model is configured). */
  notice?: string;
  /** How long threads live after their last message. Default 30 days. */
  retentionMs?: number;
  log?: PlaygroundLogger;
}

/** The playground as a {@link ChatPlatform}, plus where it is served. */
export interface PlaygroundPlatform extends ChatPlatform {
  readonly platform: "playground";
  readonly outbound: PlaygroundOutbound;
  /** The page's address once `start` resolved (`http://localhost:<port>`), else `undefined`. */
  readonly url: string | undefined;
}

const SILENT: PlaygroundLogger = { info() {}, warn() {}, error() {} };

/**
 * Threadline's third chat platform: a local web chat. `outbound` writes to Redis and works in any process
 * (workers need nothing else); `start(inbound)` — the gateway — serves the page, the JSON API and the live
 * event stream over HTTP and feeds every message, edit, reaction and button click to `inbound`, exactly
 * like the Slack and Discord adapters. `stop` closes the server and the subscriber; idempotent.
 * @throws from `start` when the port is taken or Redis does not answer.
 */
export function createPlaygroundPlatform(options: PlaygroundPlatformOptions): PlaygroundPlatform {
  const log = options.log ?? SILENT;
  const storeOptions: ConstructorParameters<typeof PlaygroundStore>[1] = { keys: options.keys };
  if (options.retentionMs !== undefined) storeOptions.retentionMs = options.retentionMs;
  const store = new PlaygroundStore(options.redis, storeOptions);
  const outbound = new PlaygroundOutbound(store, PLAYGROUND_BOT);
  let server: Server | undefined;
  let live: LiveUpdates | undefined;
  let url: string | undefined;

  return {
    platform: "playground",
    outbound,
    get url() {
      return url;
    },
    async start(inbound: ChatInbound) {
      if (server) throw new Error("playground: already started");
      live = new LiveUpdates(options.redis.duplicate(), store.keys.events);
      await live.start();
      const actions = new PlaygroundActions({ store, inbound, botName: PLAYGROUND_BOT.name });
      const info = {
        botName: PLAYGROUND_BOT.name,
        reactions: options.reactions ?? DEFAULT_REACTIONS,
        roles: REACTION_ROLES,
        emoji: EMOJI_BY_NAME,
        notice: options.notice ?? null,
      };
      const serverOptions: Parameters<typeof createPlaygroundServer>[0] = { actions, store, live, info, log };
      const host = options.host ?? "127.0.0.1";
      if (options.allowedHosts) serverOptions.allowedHosts = options.allowedHosts;
      const listening = createPlaygroundServer(serverOptions);
      server = listening;
      const wanted = options.port ?? 3000;
      try {
        await new Promise<void>((resolve, reject) => {
          listening.once("error", reject);
          listening.listen(wanted, host, () => {
            listening.off("error", reject);
            resolve();
          });
        });
      } catch (err) {
        await this.stop();
        const code = (err as NodeJS.ErrnoException).code;
        if (code === "EADDRINUSE")
          throw new Error(
            `playground: port ${wanted} on ${host} is in use; set PLAYGROUND_PORT (or PORT) to a free port`,
          );
        throw err;
      }
      const { port } = listening.address() as AddressInfo;
      url = `http://localhost:${port}`;
      log.info({ url }, `playground: open ${url} in your browser`);
    },
    async stop() {
      const closing = server;
      server = undefined;
      url = undefined;
      await live?.close();
      live = undefined;
      if (!closing) return;
      closing.closeAllConnections();
      await new Promise<void>((resolve) => closing.close(() => resolve()));
    },
  };
}
