import type { AgentMessage, Tool } from "../agent/index.js";
import type { Summarizer, TokenCounter } from "../llm/index.js";

/** What the context manager did to one request (for logs and tests). */
export type ContextEvent =
  | { type: "shortened"; toolResults: number }
  | { type: "summarized"; covered: number; persisted: boolean }
  | { type: "summary_failed"; error: unknown }
  | { type: "dropped"; messages: number }
  | { type: "over_budget"; tokens: number; budget: number }
  | { type: "error"; error: unknown };

/** Options of {@link createContextManager}. */
export interface ContextManagerOptions {
  /** The model's input window in tokens (see `contextWindowFor`). */
  contextWindow: number;
  /** Tokens kept free for the answer. Default min(4 096, window / 8). */
  reserveOutputTokens?: number;
  /** Multiplies token counts (for models whose tokenizer is unknown). Default 1; ignored with `counter`. */
  safetyFactor?: number;
  counter?: TokenCounter;
  /** Summarizes the oldest turns; without it they are left out of the request with a note. */
  summarize?: Summarizer;
  /** Older tool results above this many tokens are shortened first. Default 1 000. */
  largeToolResultTokens?: number;
  /** Characters a shortened tool result keeps from its start and its end. Default 1 200 and 400. */
  headChars?: number;
  tailChars?: number;
  /** Share of the budget the kept recent messages may use right after a summary. Default 0.5. */
  keepRatio?: number;
  /** Observes what was done; must not throw. */
  onEvent?: (event: ContextEvent) => void;
}

/** What one run tells the manager (structurally the runs side's per-run context). */
export interface ContextRun {
  systemPrompt?: string;
  tools?: readonly Tool[];
  /** Persists a custom message in the thread's transcript; resolves false when it could not. */
  appendToTranscript?: (message: AgentMessage) => Promise<boolean>;
}

/** A loop `transformContext`. */
export type ContextTransform = (messages: AgentMessage[], signal?: AbortSignal) => Promise<AgentMessage[]>;

/** The manager's options with their defaults applied, shared by every step. */
export interface ContextPolicy {
  contextWindow: number;
  counter: TokenCounter;
  reserve: number;
  large: number;
  headChars: number;
  tailChars: number;
  keepRatio: number;
  summarize: Summarizer | undefined;
  /** Reports an event to `onEvent`, swallowing what the observer throws. */
  emit: (event: ContextEvent) => void;
}
