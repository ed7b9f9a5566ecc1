import { type ChatLogger, SILENT_LOGGER } from "../chat/index.js";

/**
 * Who may use the bot. Every list is an allowlist of Slack ids; an empty list allows everyone. Events
 * that fail a check are dropped silently (and logged at debug level) before anything else happens.
 */
export interface SlackAccess {
  /** Workspace (team) ids, e.g. `T0123ABCD`. */
  teams: string[];
  /** Channel ids (public, private, DMs), e.g. `C0123ABCD`. */
  channels: string[];
  /** User ids whose messages and reactions reach the bot, e.g. `U0123ABCD`. */
  users: string[];
  /** Bot ids (`B…`) whose messages are treated like users' messages; every other bot is ignored. */
  bots: string[];
  /** Direct messages to the bot start runs. Default `true`. */
  directMessages: boolean;
}

/** Allows everything except other bots. */
export const OPEN_ACCESS: SlackAccess = {
  teams: [],
  channels: [],
  users: [],
  bots: [],
  directMessages: true,
};

/** True when `id` passes `list` (an empty list allows every id). */
export function allowed(list: readonly string[], id: string | undefined): boolean {
  return list.length === 0 || (id !== undefined && list.includes(id));
}

/** Structured log sink of the Slack adapter: the one {@link ChatLogger} of every adapter. */
export type SlackLogger = ChatLogger;

/** Logs nothing. */
export const SILENT_SLACK_LOGGER: SlackLogger = SILENT_LOGGER;

/** Slack's Web API base URL. */
export const DEFAULT_SLACK_API_URL = "https://slack.com/api/";
