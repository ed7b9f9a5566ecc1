import { countTokens } from "gpt-tokenizer/encoding/o200k_base";
import * as knownModels from "gpt-tokenizer/models";
import type { AgentMessage, Tool } from "../agent/index.js";
import { toolParametersSchema } from "./tool-schema.js";

/** Context window assumed for a model nobody told us about: small enough for most local models. */
export const UNKNOWN_CONTEXT_WINDOW = 16_384;
/** Tokens counted per image block (OpenAI's high-detail tile cost is in this range). */
const IMAGE_TOKENS = 1_000;
/** Per-message framing tokens of the chat format (role, separators). */
const MESSAGE_OVERHEAD = 4;
const NO_SPECIAL_TOKENS = { disallowedSpecial: new Set<string>() };

/**
 * Longest piece of text the tokenizer is ever handed. BPE merges within one pre-token (a run of letters
 * without spaces, say) cost time quadratic in its length: 64 KiB of one character took seconds. Slices this
 * short keep every call well under a millisecond; a slice ends where the tokenizer splits anyway where it
 * can (before whitespace or a symbol, so the count stays exact), and mid-word only in text without either
 * (about one extra token per slice).
 */
export const MAX_TOKENIZER_SLICE_CHARS = 128;
/**
 * Most characters tokenized for one text or one message. Longer ones are estimated from evenly spaced
 * samples of this many characters in total (tokens per character of the samples × the length), so the work
 * per count is bounded whatever the size: a request could never carry a text that large anyway.
 */
export const MAX_TOKENIZED_CHARS = 4_096;
/** Characters per sample window of an estimated text. */
const SAMPLE_WINDOW_CHARS = 512;

/** Counts the tokens of one short slice of text (at most {@link MAX_TOKENIZER_SLICE_CHARS} characters). */
export type SliceTokenizer = (slice: string) => number;

const o200k: SliceTokenizer = (slice) => countTokens(slice, NO_SPECIAL_TOKENS);

const isSpace = (code: number) => code === 32 || code === 10 || code === 9 || code === 13;
/** ASCII letters and digits: a symbol after one of them starts a new piece for the tokenizer. */
const isAlnum = (code: number) =>
  (code >= 48 && code <= 57) || (code >= 65 && code <= 90) || (code >= 97 && code <= 122);
const isSymbol = (code: number) => code > 32 && code < 127 && !isAlnum(code);

/**
 * Where to end a slice of `text` that starts at `start` and may not pass `end`: before a whitespace that
 * follows a non-space, else before an ASCII symbol that follows a letter or digit (the tokenizer's
 * pre-split breaks there too, so the count stays exact), within the slice's second half; else at `end`,
 * never inside a surrogate pair.
 */
function sliceEnd(text: string, start: number, end: number): number {
  const floor = start + MAX_TOKENIZER_SLICE_CHARS / 2;
  for (let cut = end; cut > floor; cut--) {
    if (isSpace(text.charCodeAt(cut)) && !isSpace(text.charCodeAt(cut - 1))) return cut;
  }
  for (let cut = end; cut > floor; cut--) {
    if (isSymbol(text.charCodeAt(cut)) && isAlnum(text.charCodeAt(cut - 1))) return cut;
  }
  const code = text.charCodeAt(end - 1);
  return code >= 0xd800 && code <= 0xdbff ? end - 1 : end;
}

/** Feeds `text[from, to)` to `tokenize` in slices of at most {@link MAX_TOKENIZER_SLICE_CHARS}; sums the counts. */
function countRange(text: string, from: number, to: number, tokenize: SliceTokenizer): number {
  let tokens = 0;
  let start = from;
  while (start < to) {
    let end = Math.min(to, start + MAX_TOKENIZER_SLICE_CHARS);
    if (end < to) end = sliceEnd(text, start, end);
    tokens += tokenize(text.slice(start, end));
    start = end;
  }
  return tokens;
}

/**
 * Tokens of `parts` (pieces of one message or text, counted as separate texts). Up to
 * {@link MAX_TOKENIZED_CHARS} characters in total they are tokenized exactly (in slices); beyond, the
 * count is estimated from windows spread evenly over the concatenation. Work is linear in the number of
 * parts and bounded in their length.
 */
export function countTextTokens(parts: readonly string[], tokenize: SliceTokenizer = o200k): number {
  let total = 0;
  for (const part of parts) total += part.length;
  if (total === 0) return 0;
  if (total <= MAX_TOKENIZED_CHARS) {
    let tokens = 0;
    for (const part of parts) if (part !== "") tokens += countRange(part, 0, part.length, tokenize);
    return tokens;
  }
  const windows = Math.floor(MAX_TOKENIZED_CHARS / SAMPLE_WINDOW_CHARS);
  const step = (total - SAMPLE_WINDOW_CHARS) / (windows - 1);
  let sampledChars = 0;
  let sampledTokens = 0;
  let part = 0;
  let partStart = 0;
  for (let w = 0; w < windows; w++) {
    const from = Math.round(w * step);
    const to = from + SAMPLE_WINDOW_CHARS;
    // Windows ascend, so the part cursor only moves forward.
    while (partStart + parts[part]!.length <= from) partStart += parts[part++]!.length;
    let cursor = part;
    let cursorStart = partStart;
    while (cursor < parts.length && cursorStart < to) {
      const text = parts[cursor]!;
      const a = Math.max(from, cursorStart) - cursorStart;
      const b = Math.min(to, cursorStart + text.length) - cursorStart;
      if (b > a) {
        sampledTokens += countRange(text, a, b, tokenize);
        sampledChars += b - a;
      }
      cursorStart += text.length;
      cursor++;
    }
  }
  return Math.ceil((sampledTokens / sampledChars) * total);
}

/**
 * Raw o200k counts (no safety factor, thinking not counted) of messages, by message object: filled by every
 * default counter and by {@link rememberMessageTokens} for messages read back from storage with their
 * count, so a message is tokenized once, not once per process and run.
 */
const knownMessageTokens = new WeakMap<object, number>();

/** Per-message framing and the texts of one message, as {@link createTokenCounter} counts them. */
function rawMessageTokens(message: AgentMessage, tokenize: SliceTokenizer, countThinking: boolean): number {
  const m = message as { role?: string; content?: unknown };
  let tokens = MESSAGE_OVERHEAD;
  if (typeof m.content === "string") return tokens + countTextTokens([m.content], tokenize);
  if (!Array.isArray(m.content)) return tokens + countTextTokens([JSON.stringify(message)], tokenize);
  // Every text of the message is counted in one bounded pass.
  const parts: string[] = [];
  for (const block of m.content as { type?: string; [key: string]: unknown }[]) {
    if (block.type === "text") parts.push(String(block.text ?? ""));
    else if (block.type === "image") tokens += IMAGE_TOKENS;
    else if (block.type === "toolCall") {
      parts.push(String(block.name), JSON.stringify(block.arguments) ?? "");
      tokens += 8;
    } else if (block.type === "thinking" && countThinking) parts.push(String(block.thinking ?? ""));
  }
  if (m.role === "toolResult") tokens += 6;
  return tokens + countTextTokens(parts, tokenize);
}

/**
 * The raw token count of a message as a default counter (o200k, no safety factor, thinking not counted)
 * sees it, remembered for the message object: what a transcript stores with the message (see
 * {@link rememberMessageTokens}).
 */
export function messageTokens(message: AgentMessage): number {
  let tokens = knownMessageTokens.get(message as object);
  if (tokens === undefined) {
    tokens = rawMessageTokens(message, o200k, false);
    knownMessageTokens.set(message as object, tokens);
  }
  return tokens;
}

/**
 * Tells every default counter the raw count of a message read back from storage (the {@link messageTokens}
 * stored with it), so it is not tokenized again. The message must be unchanged since it was counted.
 */
export function rememberMessageTokens(message: AgentMessage, tokens: number): void {
  if (Number.isInteger(tokens) && tokens >= 0) knownMessageTokens.set(message as object, tokens);
}

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
  /** Counts one slice; it is only ever handed slices within the bounds above. Default: o200k_base. */
  tokenizer?: SliceTokenizer;
}

/**
 * A token counter on gpt-tokenizer's o200k_base encoding. Special-token text such as `<|endoftext|>` in a
 * message is counted as plain text (never throws). Work per count is linear and bounded: the tokenizer
 * sees slices of at most {@link MAX_TOKENIZER_SLICE_CHARS} characters and at most
 * {@link MAX_TOKENIZED_CHARS} characters per text or message; longer ones are estimated from samples (see
 * {@link countTextTokens}). Message counts are cached in a WeakMap, so a long transcript is counted once
 * per process and run, not once per turn.
 */
export function createTokenCounter(options: TokenCounterOptions = {}): TokenCounter {
  const factor = options.safetyFactor ?? 1;
  const tokenize = options.tokenizer ?? o200k;
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
  const raw = (text: string) => countTextTokens([text], tokenize);
  const scale = (tokens: number) => Math.ceil(tokens * factor);

  // The default counting is shared by every default counter (and stored with transcript messages).
  const shared = options.tokenizer === undefined && !options.countThinking;
  const rawMessage = (message: AgentMessage): number =>
    shared ? messageTokens(message) : rawMessageTokens(message, tokenize, options.countThinking ?? false);

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
