import { countTokens } from "gpt-tokenizer/encoding/o200k_base";
import * as knownModels from "gpt-tokenizer/models";
import type { AgentMessage, Tool } from "../agent/index.js";
import { toolParametersSchema } from "./openai-tools.js";

/** Context window assumed for a model nobody told us about: small enough for most local models. */
export const UNKNOWN_CONTEXT_WINDOW = 16_384;
/** Tokens counted per image block (OpenAI's high-detail tile cost is in this range). */
const IMAGE_TOKENS = 1_000;
/** Per-message framing tokens of the chat format (role, separators). */
const MESSAGE_OVERHEAD = 4;
const NO_SPECIAL_TOKENS = { disallowedSpecial: new Set<string>() };

/** Counts tokens of what a request carries, with the safety factor applied. */
export interface TokenCounter {
  /** Tokens of a piece of text (long texts are remembered: system prompts repeat every request). */
  text(text: string): number;
  /** Tokens one transcript message costs in a request; cached per message object. */
  message(message: AgentMessage): number;
  /** Tokens of the tool definitions (names, descriptions, JSON Schemas). */
  tools(tools: readonly Tool[] | undefined): number;
}

/** Options of {@link createTokenCounter}. */
export interface TokenCounterOptions {
  /**
   * Multiplies every count. 1 for OpenAI models (their o200k tokenizer is what we count with); more for
   * other models, whose tokenizers differ. Default 1.
   */
  safetyFactor?: number;
  /** Count assistant thinking blocks (only sent back when the provider replays reasoning). Default false. */
  countThinking?: boolean;
}

/**
 * A token counter on gpt-tokenizer's o200k_base encoding. Special-token text such as `<|endoftext|>` in a
 * message is counted as plain text (never throws). Message counts are cached in a WeakMap, so a long
 * transcript is tokenized once per process and run, not once per turn.
 */
export function createTokenCounter(options: TokenCounterOptions = {}): TokenCounter {
  const factor = options.safetyFactor ?? 1;
  const cache = new WeakMap<object, number>();
  // The system prompt and the tool definitions are the same text request after request (tools may be
  // new objects per run): remember their counts by text, in a bounded map.
  const texts = new Map<string, number>();
  const remembered = (text: string): number => {
    let tokens = texts.get(text);
    if (tokens === undefined) {
      tokens = raw(text);
      if (texts.size >= 256) texts.clear();
      texts.set(text, tokens);
    }
    return tokens;
  };
  const raw = (text: string) => (text === "" ? 0 : countTokens(text, NO_SPECIAL_TOKENS));
  const scale = (tokens: number) => Math.ceil(tokens * factor);

  const rawMessage = (message: AgentMessage): number => {
    const m = message as { role?: string; content?: unknown };
    let tokens = MESSAGE_OVERHEAD;
    if (typeof m.content === "string") return tokens + raw(m.content);
    if (!Array.isArray(m.content)) return tokens + raw(JSON.stringify(message));
    for (const block of m.content as { type?: string; [key: string]: unknown }[]) {
      if (block.type === "text") tokens += raw(String(block.text ?? ""));
      else if (block.type === "image") tokens += IMAGE_TOKENS;
      else if (block.type === "toolCall")
        tokens += raw(String(block.name)) + raw(JSON.stringify(block.arguments)) + 8;
      else if (block.type === "thinking" && options.countThinking)
        tokens += raw(String(block.thinking ?? ""));
    }
    if (m.role === "toolResult") tokens += 6;
    return tokens;
  };

  return {
    text: (text) => scale(text.length >= 256 ? remembered(text) : raw(text)),
    message(message) {
      const cached = cache.get(message as object);
      if (cached !== undefined) return cached;
      const tokens = scale(rawMessage(message));
      cache.set(message as object, tokens);
      return tokens;
    },
    tools(tools) {
      let tokens = 0;
      for (const tool of tools ?? []) {
        tokens += raw(tool.name) + remembered(tool.description) + 10;
        tokens += remembered(JSON.stringify(toolParametersSchema(tool.parameters)));
      }
      return scale(tokens);
    },
  };
}

/** Context windows of common non-OpenAI model families, by id prefix (conservative values). */
const FAMILY_WINDOWS: [RegExp, number][] = [
  [/^claude/, 200_000],
  [/^gemini-(1\.5|2|3)/, 1_000_000],
  [/^(meta-)?llama-?3\.[123]/, 128_000],
  [/^(meta-)?llama-?4/, 128_000],
  [/^qwen2\.5|^qwen3/, 32_768],
  [/^(mistral|mixtral|codestral|ministral)/, 32_768],
  [/^deepseek/, 64_000],
  [/^gemma-?3/, 128_000],
  [/^gpt-oss/, 128_000],
];

/** What is known about a model's context window. */
export interface ContextWindowInfo {
  tokens: number;
  /** `configured` (operator), `known` (model metadata), or `unknown` (the safe default). */
  source: "configured" | "known" | "unknown";
  /** Whether the model uses the o200k/cl100k family we count with (counts are then nearly exact). */
  openAITokenizer: boolean;
}

/**
 * The input window of a model: the configured value wins; then OpenAI's published metadata (via
 * gpt-tokenizer, `max_input_tokens` when given); then a few well-known families; else
 * {@link UNKNOWN_CONTEXT_WINDOW}. Provider prefixes (`openai/gpt-4o`) and `:tags` are ignored.
 */
export function contextWindowFor(modelId: string, configured?: number): ContextWindowInfo {
  const id = modelId.toLowerCase().replace(/^.*\//, "").replace(/:.*$/, "");
  const spec = (
    knownModels as unknown as Record<string, { context_window?: number; max_input_tokens?: number }>
  )[id];
  const openAITokenizer = spec !== undefined || /^(gpt-|o\d|chatgpt)/.test(id);
  if (configured !== undefined) return { tokens: configured, source: "configured", openAITokenizer };
  const known = spec?.max_input_tokens ?? spec?.context_window;
  if (known) return { tokens: known, source: "known", openAITokenizer };
  const family = FAMILY_WINDOWS.find(([pattern]) => pattern.test(id));
  if (family) return { tokens: family[1], source: "known", openAITokenizer };
  return { tokens: UNKNOWN_CONTEXT_WINDOW, source: "unknown", openAITokenizer };
}
