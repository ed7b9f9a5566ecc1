/**
 * An incremental Server-Sent Events parser for chat-completion streams: feed it decoded text as it
 * arrives; it calls `onData` with each event's `data` (multi-line data joined with `\n`). Comment lines
 * (`: OPENROUTER PROCESSING`, `: keep-alive`) and other fields are skipped; `\n`, `\r\n` and `\r` end
 * lines (https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation).
 */
export class SseParser {
  private buffer = "";
  private data: string | undefined;
  private event: string | undefined;
  /** True once the text so far had a `\r` at its very end (the `\n` of a `\r\n` may follow). */
  private pendingCR = false;

  constructor(private readonly onData: (data: string, event: string | undefined) => void) {}

  /** Feeds the next decoded piece of the body. May call `onData` several times; rethrows what it throws. */
  feed(text: string): void {
    let input = text;
    if (this.pendingCR) {
      this.pendingCR = false;
      if (input.startsWith("\n")) input = input.slice(1);
    }
    const all = this.buffer === "" ? input : this.buffer + input;
    let start = 0;
    for (;;) {
      let end = all.indexOf("\n", start);
      const cr = all.indexOf("\r", start);
      let skip = 1;
      if (cr >= 0 && (end < 0 || cr < end)) {
        end = cr;
        if (all.charCodeAt(cr + 1) === 10) skip = 2;
        else if (cr === all.length - 1) this.pendingCR = true;
      }
      if (end < 0) break;
      this.line(all.slice(start, end));
      start = end + skip;
    }
    this.buffer = start === 0 ? all : all.slice(start);
  }

  /** Dispatches an event left unterminated at the end of the body (servers that omit the last blank line). */
  end(): void {
    if (this.buffer !== "") this.line(this.buffer);
    this.buffer = "";
    this.line("");
  }

  private line(line: string): void {
    if (line === "") {
      const data = this.data;
      const event = this.event;
      this.data = undefined;
      this.event = undefined;
      if (data !== undefined) this.onData(data, event);
      return;
    }
    const first = line.charCodeAt(0);
    if (first === 58 /* ":" */) return;
    if (line.startsWith("data:")) {
      const value = line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5);
      this.data = this.data === undefined ? value : `${this.data}\n${value}`;
    } else if (line.startsWith("event:")) {
      this.event = line.slice(line.charCodeAt(6) === 32 ? 7 : 6);
    }
  }
}
