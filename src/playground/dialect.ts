import { type ChatDialect, MARKDOWN_DIALECT } from "../chat/index.js";

/**
 * The playground's {@link ChatDialect}: the page renders Markdown itself (newlines significant, `-# `
 * lines as the footer element), times in UTC, mentions as `@id`.
 */
export const PLAYGROUND_DIALECT: ChatDialect = MARKDOWN_DIALECT;
