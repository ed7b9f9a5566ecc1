/**
 * A fence-aware view of Markdown lines: the one place that knows where fenced code blocks start and end,
 * shared by message splitting and chunked dialect conversion.
 */

/** What a line is, as far as fenced code blocks are concerned. */
export type MarkdownLineKind = "text" | "blank" | "fence-open" | "code" | "fence-close";

/** One line of a Markdown text. Offsets index the scanned string. */
export interface MarkdownLine {
  /** Offset of the line's first character. */
  start: number;
  /** Offset just past the line's content (the position of its `\n`, or the end of the text). */
  end: number;
  kind: MarkdownLineKind;
  /** For `fence-open`, `code` and `fence-close` lines: the opening fence line of the block, verbatim. */
  opener?: string;
  /** For `fence-open`, `code` and `fence-close` lines: a line that closes the block (indent + fence). */
  closer?: string;
}

const OPEN = /^([ \t]*)(`{3,}|~{3,})(.*)$/;
const CLOSE = /^([ \t]*)(`{3,}|~{3,})[ \t]*$/;

/**
 * Splits `text` into lines and classifies each one. Fences are recognised leniently (any indentation, so
 * fences inside list items count); a closing fence must use the opener's character, be at least as long
 * and carry no info string; an unclosed fence runs to the end of the text. Never throws; O(length).
 */
export function scanMarkdownLines(text: string): MarkdownLine[] {
  const lines: MarkdownLine[] = [];
  let fence: { opener: string; closer: string; char: string; length: number } | undefined;
  let start = 0;
  while (start <= text.length) {
    const newline = text.indexOf("\n", start);
    const end = newline === -1 ? text.length : newline;
    const content = text.slice(start, end);
    if (fence) {
      const close = CLOSE.exec(content);
      const closes = close !== null && close[2]![0] === fence.char && close[2]!.length >= fence.length;
      lines.push({
        start,
        end,
        kind: closes ? "fence-close" : "code",
        opener: fence.opener,
        closer: fence.closer,
      });
      if (closes) fence = undefined;
    } else {
      const open = OPEN.exec(content);
      const marker = open?.[2];
      if (open && marker && !(marker[0] === "`" && open[3]!.includes("`"))) {
        fence = { opener: content, closer: open[1]! + marker, char: marker[0]!, length: marker.length };
        lines.push({ start, end, kind: "fence-open", opener: fence.opener, closer: fence.closer });
      } else {
        lines.push({ start, end, kind: content.trim() === "" ? "blank" : "text" });
      }
    }
    if (newline === -1) break;
    start = newline + 1;
  }
  return lines;
}

/**
 * True when a split between `lines[index - 1]` and `lines[index]` falls inside a fenced block (so each
 * side needs the fence closed or reopened).
 */
export function isInsideFenceBefore(lines: readonly MarkdownLine[], index: number): boolean {
  const kind = lines[index]?.kind;
  return kind === "code" || kind === "fence-close";
}

/** The closing fence the text needs when it ends inside an unclosed fenced block, else `undefined`. */
export function unclosedFence(text: string): string | undefined {
  const last = scanMarkdownLines(text).at(-1);
  return last && (last.kind === "code" || last.kind === "fence-open") ? last.closer : undefined;
}
