import { isInsideFenceBefore, type MarkdownLine, scanMarkdownLines } from "./markdown-lines.js";

/** The smallest `maxChars` {@link splitMessage} accepts: room for a reopened and closed code fence. */
export const MIN_SPLIT_CHARS = 32;

/**
 * One part of a split text: `text.slice(start, end)`, prefixed with `reopen + "\n"` when it continues a
 * code block, suffixed with `close` (after a newline if needed) when it cuts one or ends inside one.
 */
export interface SplitPiece {
  start: number;
  end: number;
  /** Opening fence line repeated at the top of this part, because the code block began in an earlier one. */
  reopen?: string;
  /** Closing fence added at the bottom of this part, because the code block goes on (or was never closed). */
  close?: string;
}

/**
 * Splits Markdown `text` into parts of at most `maxChars` characters.
 *
 * Boundaries are chosen in this order: a paragraph break or fence edge outside code blocks (when it keeps
 * the part at least half full), any line break outside code blocks, a line break inside a code block (the
 * block is closed at the end of the part and its opening fence repeated at the top of the next one), a
 * space, and finally a hard cut that never separates a surrogate pair. Every part has balanced fences.
 * Without fence repairs, `parts.join("")` equals `text`: nothing is dropped or trimmed.
 *
 * @throws RangeError when `maxChars` is below {@link MIN_SPLIT_CHARS}.
 */
export function splitMessage(text: string, maxChars: number): string[] {
  return planSplit(text, maxChars).map((piece) => pieceText(text, piece));
}

/** The text of one planned piece (see {@link SplitPiece}). */
export function pieceText(text: string, piece: SplitPiece): string {
  let body = text.slice(piece.start, piece.end);
  if (piece.reopen !== undefined) body = `${piece.reopen}\n${body}`;
  if (piece.close !== undefined) body = `${body}${body.endsWith("\n") ? "" : "\n"}${piece.close}`;
  return body;
}

/**
 * Plans {@link splitMessage}'s parts as offsets, so callers can map parts back to the source (the run
 * renderer freezes the parts it has already posted). Same contract as `splitMessage`.
 */
export function planSplit(text: string, maxChars: number): SplitPiece[] {
  if (!(maxChars >= MIN_SPLIT_CHARS)) {
    throw new RangeError(`maxChars must be at least ${MIN_SPLIT_CHARS}, got ${maxChars}`);
  }
  const lines = scanMarkdownLines(text);
  const pieces: SplitPiece[] = [];
  let start = 0;
  let reopen: string | undefined;
  let lineIndex = 0;
  for (;;) {
    const prefix = reopen === undefined ? 0 : reopen.length + 1;
    const trailing = trailingClose(lines);
    const rest = prefix + text.length - start + (trailing === undefined ? 0 : trailing.length + 1);
    if (rest <= maxChars || start >= text.length) {
      pieces.push(withFences({ start, end: text.length }, reopen, trailing));
      return pieces;
    }
    while (lineIndex + 1 < lines.length && lines[lineIndex + 1]!.start <= start) lineIndex++;
    const cut = chooseCut(text, lines, lineIndex, start, maxChars - prefix);
    pieces.push(withFences({ start, end: cut.end }, reopen, cut.fence?.closer));
    start = cut.end;
    reopen = cut.fence === undefined ? undefined : reopenLine(cut.fence, maxChars);
  }
}

interface Cut {
  end: number;
  /** The fenced block the cut falls in, if any. */
  fence?: MarkdownLine;
}

/** Picks where the part starting at `start` ends, given `budget` characters for its body. */
function chooseCut(
  text: string,
  lines: readonly MarkdownLine[],
  firstLine: number,
  start: number,
  budget: number,
): Cut {
  const limit = start + budget;
  const half = start + budget / 2;
  let paragraph: number | undefined;
  let line: number | undefined;
  let inFence: Cut | undefined;
  for (let index = firstLine + 1; index < lines.length; index++) {
    const current = lines[index]!;
    if (current.start > limit) break;
    if (current.start <= start) continue;
    const previous = lines[index - 1]!;
    if (isInsideFenceBefore(lines, index)) {
      // Needs room for the closing fence; a cut next to the opener or closer would leave an empty block.
      const emptyBlock = current.kind === "fence-close" || previous.kind === "fence-open";
      if (!emptyBlock && current.start + previous.closer!.length + 1 <= limit) {
        inFence = { end: current.start, fence: previous };
      }
      continue;
    }
    line = current.start;
    const paragraphBreak =
      (previous.kind === "blank" && current.kind !== "blank") ||
      previous.kind === "fence-close" ||
      current.kind === "fence-open";
    if (paragraphBreak) paragraph = current.start;
  }
  if (paragraph !== undefined && paragraph >= half) return { end: paragraph };
  if (line !== undefined && line >= half) return { end: line };
  if (paragraph !== undefined || line !== undefined) return { end: Math.max(paragraph ?? 0, line ?? 0) };
  if (inFence) return inFence;
  return cutInsideLine(text, lines, start, limit);
}

/** No line break fits: cut at the last space, else hard, closing the fence if the line is code. */
function cutInsideLine(text: string, lines: readonly MarkdownLine[], start: number, limit: number): Cut {
  const line = lineAt(lines, limit);
  const fence = line.kind === "code" ? line : undefined;
  const end = fence === undefined ? limit : limit - fence.closer!.length - 1;
  const floor = Math.max(start, line.start);
  const space = Math.max(text.lastIndexOf(" ", end - 1), text.lastIndexOf("\t", end - 1));
  let cut = space > floor ? space + 1 : end;
  if (cut <= start) cut = start + 1;
  const code = text.charCodeAt(cut - 1);
  if (code >= 0xd800 && code <= 0xdbff && cut - 1 > start) cut--;
  return fence === undefined ? { end: cut } : { end: cut, fence };
}

function lineAt(lines: readonly MarkdownLine[], offset: number): MarkdownLine {
  let low = 0;
  let high = lines.length - 1;
  while (low < high) {
    const middle = (low + high + 1) >> 1;
    if (lines[middle]!.start <= offset) low = middle;
    else high = middle - 1;
  }
  return lines[low]!;
}

/** The closer the whole text needs when it ends inside a fenced block. */
function trailingClose(lines: readonly MarkdownLine[]): string | undefined {
  const last = lines.at(-1);
  return last && (last.kind === "code" || last.kind === "fence-open") ? last.closer : undefined;
}

/** The fence line to repeat; a very long info string is dropped so the part keeps room for content. */
function reopenLine(fence: MarkdownLine, maxChars: number): string {
  return fence.opener!.length <= maxChars / 4 ? fence.opener! : fence.closer!;
}

function withFences(piece: SplitPiece, reopen: string | undefined, close: string | undefined): SplitPiece {
  if (reopen !== undefined) piece.reopen = reopen;
  if (close !== undefined) piece.close = close;
  return piece;
}
