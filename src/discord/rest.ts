import { DefaultRestOptions, REST, type RESTOptions } from "discord.js";
import type { RequestPriority, RestBudget } from "./rest-budget.js";

/** Options of {@link createDiscordRest}. */
export interface DiscordRestOptions {
  /** The bot token; may also be set later with `rest.setToken`. */
  token?: string;
  /** REST base URL (default Discord's, `https://discord.com/api`); `/v10` is appended. */
  apiUrl?: string;
  /** Every request that counts against Discord's global limit waits for this budget first. */
  budget: RestBudget;
}

/**
 * REST options for discord.js clients: the API base URL and a request function that takes the shared
 * budget right before each HTTP request (retries included), so queueing in @discordjs/rest's per-route
 * buckets never consumes budget. @discordjs/rest still follows the per-route rate-limit headers and
 * waits out 429s before retrying, so no content is lost.
 */
export function discordRestOptions(options: Omit<DiscordRestOptions, "token">): Partial<RESTOptions> {
  const send = DefaultRestOptions.makeRequest;
  const rest: Partial<RESTOptions> = {
    version: "10",
    makeRequest: async (url, init) => {
      const headers = init.headers as Record<string, string> | undefined;
      const hint = headers?.[PRIORITY_HEADER];
      if (hint !== undefined) delete headers![PRIORITY_HEADER];
      const priority = requestPriority(init.method ?? "GET", url, hint);
      if (priority !== "exempt") await options.budget.acquire(priority);
      return send(url, init);
    },
  };
  if (options.apiUrl !== undefined) rest.api = options.apiUrl.replace(/\/+$/, "");
  return rest;
}

/** A REST client (no gateway connection) for workers and the gateway's own calls. */
export function createDiscordRest(options: DiscordRestOptions): REST {
  const rest = new REST(discordRestOptions(options));
  if (options.token !== undefined) rest.setToken(options.token);
  return rest;
}

const MESSAGE = /\/channels\/\d+\/messages\/\d+$/;
const TYPING = /\/channels\/\d+\/typing$/;
const OWN_REACTION = /\/channels\/\d+\/messages\/\d+\/reactions\/[^/]+\/@me$/;

/**
 * A request header (never sent) by which a caller overrides the priority its route implies, e.g. an
 * approval card's update (an edit people wait for) or the repost of a final answer already visible.
 */
export const PRIORITY_HEADER = "x-threadline-priority";

/**
 * How a request counts against the global limit: interaction callbacks and follow-ups (`/interactions`,
 * `/webhooks`) are exempt (Discord does not count them); otherwise `hint` when given; else the bot
 * adding its own reaction is an acknowledgement (`ack`), message edits, typing and message deletions are
 * low priority (the streamed draft shows progress anyway) and everything else is high priority.
 */
export function requestPriority(method: string, url: string, hint?: string): RequestPriority | "exempt" {
  const path = new URL(url).pathname;
  if (path.includes("/interactions/") || path.includes("/webhooks/")) return "exempt";
  if (hint === "ack" || hint === "high" || hint === "low") return hint;
  const verb = method.toUpperCase();
  if (verb === "PUT" && OWN_REACTION.test(path)) return "ack";
  if ((verb === "PATCH" || verb === "DELETE") && MESSAGE.test(path)) return "low";
  if (verb === "POST" && TYPING.test(path)) return "low";
  return "high";
}
