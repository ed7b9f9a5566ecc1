import type { AgentMessage } from "../agent/index.js";
import { createTokenCounter } from "../llm/index.js";
import type { ContextEvent, ContextManagerOptions, ContextPolicy, ContextRun } from "./types.js";

/** The options with their defaults applied. */
export function contextPolicy(options: ContextManagerOptions): ContextPolicy {
  const emit = (event: ContextEvent) => {
    try {
      options.onEvent?.(event);
    } catch {
      // Observers must not break requests.
    }
  };
  return {
    contextWindow: options.contextWindow,
    counter: options.counter ?? createTokenCounter({ safetyFactor: options.safetyFactor ?? 1 }),
    reserve: options.reserveOutputTokens ?? Math.min(4_096, Math.floor(options.contextWindow / 8)),
    large: options.largeToolResultTokens ?? 1_000,
    headChars: options.headChars ?? 1_200,
    tailChars: options.tailChars ?? 400,
    keepRatio: options.keepRatio ?? 0.5,
    summarize: options.summarize,
    emit,
  };
}

/** Tokens the messages of one request may use: the window less the answer's reserve, system prompt and tools. */
export function messageBudget(policy: ContextPolicy, run: ContextRun): number {
  const fixed = policy.counter.text(run.systemPrompt ?? "") + policy.counter.tools(run.tools) + 32;
  return Math.max(512, policy.contextWindow - policy.reserve - fixed);
}

/** The estimated tokens of `messages`. */
export function tokensOf(policy: ContextPolicy, messages: readonly AgentMessage[]): number {
  return messages.reduce((n, m) => n + policy.counter.message(m), 0);
}
