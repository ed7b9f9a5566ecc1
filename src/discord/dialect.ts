import { type ChatDialect, MARKDOWN_DIALECT } from "../chat/index.js";

/**
 * Discord's {@link ChatDialect}: Markdown as it is (Discord renders it, `-# ` subtext included), with
 * `<t:…>` timestamps that render in the reader's time zone and `<@id>` mentions
 * (https://discord.com/developers/docs/reference#message-formatting).
 */
export const DISCORD_DIALECT: ChatDialect = {
  ...MARKDOWN_DIALECT,
  timestamp: (ms, style) => `<t:${Math.floor(ms / 1000)}:${style === "relative" ? "R" : "f"}>`,
  mention: (userId) => `<@${userId}>`,
};
