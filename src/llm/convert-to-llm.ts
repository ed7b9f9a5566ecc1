import type { AgentMessage, Message } from "../agent/index.js";

/** Renders one app-defined (custom) message for the model; `undefined` or `[]` hides it. */
export type CustomMessageRenderer = (message: AgentMessage) => Message | Message[] | undefined;

/** Options of {@link createConvertToLlm}. */
export interface ConvertToLlmOptions {
  /**
   * Called for every message whose role is not `user`, `assistant` or `toolResult`. Must not throw.
   * Default: custom messages are filtered out.
   */
  renderCustom?: CustomMessageRenderer;
}

const LLM_ROLES = new Set(["user", "assistant", "toolResult"]);

/**
 * Builds the loop's `convertToLlm` hook: LLM messages pass through unchanged (the same objects), custom
 * messages are rendered by `renderCustom` or dropped. One pass, O(n) per turn. The OpenAI-specific
 * shaping (tool messages, images, skipping failed turns) happens later, in the stream function.
 */
export function createConvertToLlm(
  options: ConvertToLlmOptions = {},
): (messages: AgentMessage[]) => Message[] {
  const render = options.renderCustom;
  return (messages) => {
    const out: Message[] = [];
    for (const message of messages) {
      const role = (message as { role?: unknown }).role;
      if (typeof role === "string" && LLM_ROLES.has(role)) {
        out.push(message as Message);
        continue;
      }
      const rendered = render?.(message);
      if (rendered === undefined) continue;
      if (Array.isArray(rendered)) out.push(...rendered);
      else out.push(rendered);
    }
    return out;
  };
}
