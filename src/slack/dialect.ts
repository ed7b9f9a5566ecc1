import slackifyMarkdown from "slackify-markdown";
import { type ChatDialect, type MarkdownLine, scanMarkdownLines } from "../chat/index.js";

/**
 * Converts model Markdown into Slack mrkdwn via `slackify-markdown`: `*bold*`, `_italic_`, `~strike~`,
 * `<url|text>` links, `•` bullets, headings as bold lines, fenced code kept (language tag dropped),
 * `&`/`<`/`>` escaped (in code too, as Slack requires); tables become a bold header line plus one `•`
 * line per row, and thematic breaks a line of `─`. Pure and deterministic; never throws on any input.
 */
export function toSlackMrkdwn(markdown: string): string {
  return splitTopLevelChunks(markdown).map(slackifyChunk).filter(Boolean).join("\n\n");
}

/**
 * A converter that caches the conversion of each top-level Markdown chunk (blocks separated by a blank
 * line before an unindented line, or by a top-level fence), so re-converting a growing answer only
 * converts what changed; same results as {@link toSlackMrkdwn}. The cache holds at most `cacheSize`
 * chunks (default 256) and is then emptied.
 */
export function createMrkdwnConverter(cacheSize = 256): (markdown: string) => string {
  const cache = new Map<string, string>();
  return (markdown) => {
    const parts: string[] = [];
    for (const chunk of splitTopLevelChunks(markdown)) {
      let converted = cache.get(chunk);
      if (converted === undefined) {
        converted = slackifyChunk(chunk);
        if (cache.size >= cacheSize) cache.clear();
        cache.set(chunk, converted);
      }
      if (converted) parts.push(converted);
    }
    return parts.join("\n\n");
  };
}

/**
 * Slack's {@link ChatDialect}: mrkdwn, `&`/`<`/`>` escaped everywhere (code included), `*bold*`, the footer
 * in italics (mrkdwn has no small text), `<!date^…|fallback>` times that render in the reader's time zone
 * (https://docs.slack.dev/messaging/formatting-message-text#date-formatting), `<@U123>` mentions.
 */
export const SLACK_DIALECT: ChatDialect = {
  toMarkup: toSlackMrkdwn,
  createConverter: () => createMrkdwnConverter(),
  escape: escapeSlack,
  escapeCode: escapeSlack,
  bold: (text) => `*${text}*`,
  subtext: (text) => `_${text}_`,
  timestamp(ms, style) {
    const utc = `${new Date(ms).toISOString().slice(0, 16).replace("T", " ")} UTC`;
    const format = style === "relative" ? "{time}" : "{date_short_pretty} {time}";
    return `${style === "relative" ? "at " : ""}<!date^${Math.floor(ms / 1000)}^${format}|${utc}>`;
  },
  mention: (userId) => `<@${userId}>`,
};

/**
 * Cuts Markdown where converting the pieces separately gives the same result as converting the whole:
 * before an unindented line that follows a blank line, after a top-level closing fence and before a
 * top-level opening fence, never inside a fenced block. Link reference definitions do not cross chunks
 * (models rarely write them).
 */
function splitTopLevelChunks(markdown: string): string[] {
  const lines = scanMarkdownLines(markdown);
  const chunks: string[] = [];
  let start = 0;
  for (let index = 1; index < lines.length; index++) {
    const previous = lines[index - 1]!;
    const current = lines[index]!;
    if (isChunkStart(markdown, previous, current)) {
      chunks.push(markdown.slice(start, current.start));
      start = current.start;
    }
  }
  chunks.push(markdown.slice(start));
  return chunks.map((chunk) => chunk.trim()).filter((chunk) => chunk !== "");
}

function isChunkStart(markdown: string, previous: MarkdownLine, current: MarkdownLine): boolean {
  const unindented = !/[ \t]/.test(markdown[current.start] ?? " ");
  if (!unindented) return false;
  if (current.kind === "text") return previous.kind === "blank" || previous.kind === "fence-close";
  if (current.kind === "fence-open") return previous.kind !== "code" && previous.kind !== "fence-open";
  return false;
}

const ZERO_WIDTH_SPACE = "\u200b";
const DELIMITER_ROW = /^\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?$/;

/**
 * slackify-markdown plus what it leaves to us: Slack needs `&`, `<` and `>` escaped in code too (the
 * library escapes them only in text), and it cannot show tables or thematic breaks.
 */
function slackifyChunk(chunk: string): string {
  const converted = slackifyMarkdown(chunk).trim();
  if (!/[`|]|^\*\*\*$/m.test(converted)) return converted;
  const lines = converted.split("\n");
  const kinds = scanMarkdownLines(converted);
  const out: string[] = [];
  for (let index = 0; index < lines.length; index++) {
    const line = lines[index]!;
    const kind = kinds[index]!.kind;
    const delimiter = lines[index + 1];
    if (kind === "code") {
      out.push(escapeSlack(line));
    } else if (kind !== "text") {
      out.push(line);
    } else if (line.startsWith("|") && delimiter !== undefined && DELIMITER_ROW.test(delimiter)) {
      let end = index + 2;
      while (end < lines.length && lines[end]!.startsWith("|")) end++;
      out.push(...tableLines(lines[index]!, lines.slice(index + 2, end)).map(escapeInlineCode));
      index = end - 1;
    } else if (line === "***") {
      out.push("──────────");
    } else {
      out.push(escapeInlineCode(line));
    }
  }
  return out.join("\n");
}

/** Slack needs `&`, `<` and `>` escaped in message text (code blocks included). */
function escapeSlack(text: string): string {
  return text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");
}

function escapeInlineCode(line: string): string {
  if (!line.includes("`")) return line;
  return line.replace(/(`+)(?!`)([\s\S]*?[^`])\1(?!`)/g, (_span, ticks: string, code: string) => {
    return `${ticks}${escapeSlack(code)}${ticks}`;
  });
}

/** A Markdown table as Slack can show it: `*A* · *B*` then `• a1 · b1` per row. */
function tableLines(header: string, rows: string[]): string[] {
  const names = tableCells(header);
  const out: string[] = [];
  if (names.some((name) => name !== "")) {
    out.push(
      names.map((name) => (name === "" ? "" : `${ZERO_WIDTH_SPACE}*${name}*${ZERO_WIDTH_SPACE}`)).join(" · "),
    );
  }
  for (const row of rows) out.push(`• ${tableCells(row).join(" · ")}`);
  return out;
}

/** Cells of one table row; `|` inside Slack `<…>` links, inline code or escaped as `\|` does not split. */
function tableCells(row: string): string[] {
  const cells: string[] = [];
  let cell = "";
  let inLink = false;
  let inCode = false;
  const body = row.trim().replace(/^\|/, "").replace(/\|$/, "");
  for (let index = 0; index < body.length; index++) {
    const char = body[index]!;
    if (char === "\\" && body[index + 1] === "|") {
      cell += "|";
      index++;
      continue;
    }
    if (char === "`") inCode = !inCode;
    else if (char === "<" && !inCode) inLink = true;
    else if (char === ">" && !inCode) inLink = false;
    if (char === "|" && !inLink && !inCode) {
      cells.push(cell);
      cell = "";
    } else {
      cell += char;
    }
  }
  cells.push(cell);
  return cells.map((value) => value.replace(/<br\s*\/?>/gi, "; ").trim());
}
