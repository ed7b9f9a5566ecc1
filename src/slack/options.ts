import { allowed, type ChatAccess, type ChatLogger, SILENT_LOGGER } from "../chat/index.js";

/**
 * Who may use the bot: the shared {@link ChatAccess} (`channels` — public, private, DMs, e.g.
 * `C0123ABCD` —, `users` whose messages and reactions reach the bot, `directMessages`) plus Slack's own
 * lists. Every list is an allowlist of Slack ids; an empty list allows everyone. Events that fail a check
 * are dropped silently (and logged at debug level) before anything else happens.
 */
export interface SlackAccess extends ChatAccess {
  /** Workspace (team) ids, e.g. `T0123ABCD`. */
  teams: readonly string[];
  /** Bot ids (`B…`) whose messages are treated like users' messages; every other bot is ignored. */
  bots: readonly string[];
}

/** Allows everything except other bots. */
export const OPEN_ACCESS: SlackAccess = {
  teams: [],
  channels: [],
  users: [],
  bots: [],
  directMessages: true,
};

export { allowed };

/** Structured log sink of the Slack adapter: the one {@link ChatLogger} of every adapter. */
export type SlackLogger = ChatLogger;

/** Logs nothing. */
export const SILENT_SLACK_LOGGER: SlackLogger = SILENT_LOGGER;

/** Slack's Web API base URL. */
export const DEFAULT_SLACK_API_URL = "https://slack.com/api/";
