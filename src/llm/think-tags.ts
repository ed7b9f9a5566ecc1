/** Where a piece of streamed answer text belongs once inline `<think>` tags are taken out. */
export type TextChannel = "text" | "thinking";

const OPEN = "<think>";
const CLOSE = "</think>";

/**
 * Splits `<think>…</think>` out of streamed answer text, as DeepSeek-R1 distills (Groq, the Hugging Face
 * router) and Qwen3 on local servers without a reasoning parser send it. An opening tag counts only at the
 * start of the answer (after whitespace), so an answer that talks about the tag later stays text; a tag
 * split across chunks is recognised (the possible tag prefix is held back until the next piece). Leading
 * whitespace right after a tag is dropped. A stream that ends inside the tags keeps what came as thinking.
 */
export class ThinkTagSplitter {
  private inThink = false;
  /** True until the answer has any non-whitespace text (an opening tag may still come). */
  private atStart = true;
  private pending = "";
  private trimNext = false;

  constructor(private readonly emit: (channel: TextChannel, text: string) => void) {}

  /** Feeds the next piece of `content`. */
  push(piece: string): void {
    let rest = this.pending === "" ? piece : this.pending + piece;
    this.pending = "";
    // Fast path: plain answer text once the start is past.
    if (!this.inThink && !this.atStart) {
      this.out("text", rest);
      return;
    }
    for (;;) {
      const tag = this.inThink ? CLOSE : OPEN;
      if (!this.inThink) {
        const trimmed = rest.trimStart();
        if (trimmed === "") {
          this.pending = rest;
          return;
        }
        if (trimmed.startsWith(OPEN)) {
          rest = trimmed.slice(OPEN.length);
          this.inThink = true;
          this.atStart = false;
          this.trimNext = true;
          continue;
        }
        if (OPEN.startsWith(trimmed)) {
          this.pending = rest;
          return;
        }
        this.atStart = false;
        this.out("text", rest);
        return;
      }
      const at = rest.indexOf(tag);
      if (at >= 0) {
        this.out("thinking", rest.slice(0, at));
        rest = rest.slice(at + tag.length);
        this.inThink = false;
        this.atStart = false;
        this.trimNext = true;
        if (rest !== "") this.out("text", rest);
        return;
      }
      const held = heldPrefix(rest, tag);
      this.pending = rest.slice(rest.length - held);
      this.out("thinking", rest.slice(0, rest.length - held));
      return;
    }
  }

  /** Emits whatever is held back (call at the end of the stream). */
  flush(): void {
    const rest = this.pending;
    this.pending = "";
    if (rest !== "") this.out(this.inThink ? "thinking" : "text", rest);
  }

  private out(channel: TextChannel, text: string): void {
    let piece = text;
    if (this.trimNext) {
      piece = piece.trimStart();
      if (piece === "") return;
      this.trimNext = false;
    }
    if (piece !== "") this.emit(channel, piece);
  }
}

/** Length of the longest suffix of `text` that is a proper prefix of `tag`. */
function heldPrefix(text: string, tag: string): number {
  const from = text.lastIndexOf("<");
  if (from < 0 || text.length - from >= tag.length) return 0;
  return tag.startsWith(text.slice(from)) ? text.length - from : 0;
}
