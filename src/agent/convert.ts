import type { AgentMessage, Message } from "./types.js";

function isLlmMessage(message: AgentMessage): boolean {
  const role = (message as { role: string }).role;
  return role === "user" || role === "assistant" || role === "toolResult";
}

/** Keeps the messages the model understands (user, assistant, toolResult). Pure; O(n). */
export function defaultConvertToLlm(messages: AgentMessage[]): Message[] {
  const out: Message[] = [];
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i]!;
    if (isLlmMessage(message)) out.push(message as Message);
  }
  return out;
}

/**
 * Incremental {@link defaultConvertToLlm} for one run's working transcript, which only grows: each call
 * converts just the messages added since the previous call, so a turn costs the same at 50 or 50,000
 * messages. Starts over when the transcript array is replaced, shrinks, or a message it already converted
 * is no longer where it was.
 *
 * The returned array is reused and appended to on later calls: a stream function must read (or copy) it
 * during its request, not keep it.
 */
export class IncrementalConverter {
  private source: AgentMessage[] | undefined;
  private converted: Message[] = [];
  private count = 0;
  private first: AgentMessage | undefined;
  private last: AgentMessage | undefined;

  convert(messages: AgentMessage[]): Message[] {
    const count = this.count;
    if (
      this.source !== messages ||
      messages.length < count ||
      (count > 0 && (messages[0] !== this.first || messages[count - 1] !== this.last))
    ) {
      this.source = messages;
      this.converted = [];
      this.count = 0;
    }
    const out = this.converted;
    for (let i = this.count; i < messages.length; i++) {
      const message = messages[i]!;
      if (isLlmMessage(message)) out.push(message as Message);
    }
    this.count = messages.length;
    this.first = messages[0];
    this.last = messages[messages.length - 1];
    return out;
  }
}
