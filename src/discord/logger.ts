import { type ChatLogger, SILENT_LOGGER } from "../chat/index.js";

/** Structured log sink of the Discord adapter: the one {@link ChatLogger} of every adapter. */
export type DiscordLogger = ChatLogger;

/** Discards everything. */
export const SILENT_DISCORD_LOGGER: DiscordLogger = SILENT_LOGGER;
