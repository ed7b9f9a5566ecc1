import type { LlmContext, Message } from "../agent/index.js";
import type { TokenCounter } from "./context-tokens.js";
import type { ContextExceededInfo } from "./providers.js";

/** A model's context window as the app currently believes it; shared, so what a server says sticks. */
export interface ModelWindow {
  /** Tokens. */
  tokens: number;
  /** Where the figure came from. */
  source: "configured" | "known model" | "default" | "server" | "server error";
}

/** Options of {@link createContextRecovery}. */
export interface ContextRecoveryOptions {
  /** Counts the tokens of a request (the same counter the context manager uses). */
  counter: TokenCounter;
  /** Updated with the window a server reports in its error; read by whoever trims the next requests. */
  window: ModelWindow;
  /** Tokens kept free for the answer. Default: an eighth of the window, at most 4 096. */
  reserveOutputTokens?: number;
}

/**
 * The provider's `onContextExceeded`: learns the server's window from its error (or, when it names none,
 * takes three quarters of what the request counted as the new window), then returns the context cut to
 * fit: the newest messages that fit, starting at a user message so no tool result loses its call. Returns
 * `undefined` (no retry) when not even the last user turn fits. Never throws.
 */
export function createContextRecovery(
  options: ContextRecoveryOptions,
): (info: ContextExceededInfo) => LlmContext | undefined {
  return (info) => {
    const { counter, window } = options;
    const fixed = counter.text(info.context.systemPrompt) + counter.tools(info.context.tools);
    const counted = fixed + info.context.messages.reduce((sum, message) => sum + counter.message(message), 0);
    const reported = info.failure.contextWindow;
    const learned = reported ?? Math.floor(Math.min(window.tokens, counted) * 0.75);
    if (learned < window.tokens) {
      window.tokens = learned;
      window.source = "server error";
    }
    const reserve = options.reserveOutputTokens ?? Math.min(4_096, Math.floor(learned / 8));
    return fitMessages(info.context, learned - reserve - fixed, counter);
  };
}

/** The newest messages of `context` within `budget` tokens, cut at a user message; `undefined` if none fit. */
export function fitMessages(
  context: LlmContext,
  budget: number,
  counter: TokenCounter,
): LlmContext | undefined {
  const messages = context.messages;
  let used = 0;
  let cut: number | undefined;
  for (let i = messages.length - 1; i >= 0; i--) {
    used += counter.message(messages[i] as Message);
    if (used > budget) break;
    if ((messages[i] as Message).role === "user") cut = i;
  }
  if (cut === undefined) return undefined;
  return { ...context, messages: messages.slice(cut) };
}
