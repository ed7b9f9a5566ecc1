import type { ChatDialect } from "../types.js";
import { escapeMarkdown } from "./progress.js";

/**
 * The dialect of a platform that speaks Markdown (newlines significant): text is kept as it is, `**bold**`,
 * Markdown escaping, `-# ` subtext, times in UTC (`2026-01-02 12:00 UTC`), mentions as `@id`. Adapters
 * whose platform speaks Markdown with extras spread it and override what differs (native timestamps,
 * mention syntax).
 */
export const MARKDOWN_DIALECT: ChatDialect = {
  toMarkup: (markdown) => markdown,
  escape: escapeMarkdown,
  escapeCode: (text) => text,
  bold: (text) => `**${text}**`,
  subtext: (text) => `-# ${text}`,
  timestamp(ms, style) {
    const utc = `${new Date(ms).toISOString().slice(0, 16).replace("T", " ")} UTC`;
    return `${style === "relative" ? "at " : ""}${utc}`;
  },
  mention: (userId, name) => `@${name ?? userId}`,
};
