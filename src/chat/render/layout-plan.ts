import type { ReplyPart } from "../types.js";
import type { RenderedRun } from "./run-document.js";

/** One message's worth of laid-out content. */
export interface LaidOutPiece {
  text: string;
  /** `text` in structured form, when the outbound takes tool tasks. */
  parts?: ReplyPart[] | undefined;
  /** End offset of the piece in the laid-out text. */
  end: number;
  /** The fence the following piece reopens, if the piece cut a code block. */
  nextReopen: string | undefined;
}

/** What is frozen so far: messages before `frozenCount` hold the source before `frozenOffset`. */
export interface FrozenState {
  frozenCount: number;
  frozenOffset: number;
  /** Opening fence the first live message repeats, when a frozen message cut a code block. */
  carry: string | undefined;
}

/** Where a layout puts the content: texts by message index and the frozen state after it. */
export interface Placement extends FrozenState {
  texts: (string | undefined)[];
  /** The structured form of `texts` (by the same index), when the outbound takes tool tasks. */
  parts: (ReplyPart[] | undefined)[];
  /** One past the last message given content. */
  end: number;
  /** Content was left out because it needed more messages than allowed. */
  overflow: boolean;
}

/**
 * Where a run's content goes, from the first live message on: segments ending at a break are frozen
 * whole while no tool in them (or before them) still runs; of the first segment holding a running tool's
 * line, all messages but the last are frozen as long as they end before that line; segments after it are
 * laid out below it, unfrozen (an approval card sits between them while its tool waits). At most `limit`
 * messages are used in all (`overflow` says content was left out). Pure: `layoutPieces` splits and
 * converts one segment.
 */
export function planLayout(
  rendered: RenderedRun,
  state: FrozenState,
  layoutPieces: (text: string) => LaidOutPiece[],
  limit: number,
): Placement {
  const placement: Placement = { ...state, texts: [], parts: [], end: state.frozenCount, overflow: false };
  let freezing = true;
  let start = placement.frozenOffset;
  const ends: (number | undefined)[] = [...rendered.breaks.filter((end) => end > start), undefined];
  for (const end of ends) {
    const until = end ?? rendered.markdown.length;
    const segment = rendered.markdown.slice(start, until);
    if (!freezing) {
      placeBelow(placement, segment, layoutPieces, limit);
    } else if (end !== undefined && until <= rendered.runningFrom) {
      placeSegment(placement, segment, until, true, layoutPieces, limit);
    } else {
      placeSegment(placement, segment, rendered.runningFrom, false, layoutPieces, limit);
      freezing = false;
    }
    if (placement.overflow) return placement;
    start = until;
  }
  return placement;
}

/** Lays out a segment after an unfrozen one, in the messages below it; freezes nothing. */
function placeBelow(
  placement: Placement,
  segment: string,
  layoutPieces: (text: string) => LaidOutPiece[],
  limit: number,
): void {
  let pieces = segment.trim() === "" ? [] : layoutPieces(segment);
  const room = Math.max(0, limit - placement.end);
  if (pieces.length > room) {
    pieces = pieces.slice(0, room);
    placement.overflow = true;
  }
  for (const [index, piece] of pieces.entries()) {
    placement.texts[placement.end + index] = piece.text;
    placement.parts[placement.end + index] = piece.parts;
  }
  placement.end += pieces.length;
}

/** Lays out one segment (the source from the placement's frozen offset on) into `placement`. */
function placeSegment(
  placement: Placement,
  segment: string,
  until: number,
  freezeAll: boolean,
  layoutPieces: (text: string) => LaidOutPiece[],
  limit: number,
): void {
  const prefix = placement.carry === undefined ? "" : `${placement.carry}\n`;
  let pieces = segment.trim() === "" ? [] : layoutPieces(prefix + segment);
  const room = Math.max(0, limit - placement.frozenCount);
  if (pieces.length > room) {
    pieces = pieces.slice(0, room);
    placement.overflow = true;
  }
  for (const [index, piece] of pieces.entries()) {
    placement.texts[placement.frozenCount + index] = piece.text;
    placement.parts[placement.frozenCount + index] = piece.parts;
  }
  placement.end = placement.frozenCount + pieces.length;
  if (placement.overflow) return;
  if (freezeAll) {
    placement.frozenCount += pieces.length;
    placement.frozenOffset = until;
    placement.carry = undefined;
    return;
  }
  let frozen = 0;
  let offset = placement.frozenOffset;
  let carry = placement.carry;
  for (const piece of pieces.slice(0, -1)) {
    const end = placement.frozenOffset + Math.max(0, piece.end - prefix.length);
    if (end > until) break;
    frozen++;
    offset = end;
    carry = piece.nextReopen;
  }
  placement.frozenCount += frozen;
  placement.frozenOffset = offset;
  placement.carry = carry;
}
