import { createHash } from "node:crypto";
import type { AgentMessage, Model, StreamFn, StreamOptions, UserMessage } from "../agent/index.js";
import { createTokenCounter, type TokenCounter } from "./context-tokens.js";

/** Role of the summary messages stored in transcripts. */
export const CONTEXT_SUMMARY_ROLE = "contextSummary";

/**
 * A summary of a thread's oldest messages, stored in the transcript as a custom message (appended when it
 * was made) so it is made once and reused by every later request and run. The transcript keeps the
 * original messages; only requests replace them with the summary.
 */
export interface ContextSummaryMessage {
  role: typeof CONTEXT_SUMMARY_ROLE;
  summary: string;
  /** How many transcript messages from the start (summary messages not counted) the summary replaces. */
  covered: number;
  /** {@link messageFingerprint} of the first message after the covered ones; guards against a changed transcript. */
  firstKept: string;
  timestamp: number;
}

/** True for a {@link ContextSummaryMessage}. */
export function isContextSummary(message: unknown): boolean {
  return (message as { role?: unknown } | undefined)?.role === CONTEXT_SUMMARY_ROLE;
}

/** The message as a {@link ContextSummaryMessage}, or `undefined` when it is something else. */
export function asContextSummary(message: unknown): ContextSummaryMessage | undefined {
  return isContextSummary(message) ? (message as ContextSummaryMessage) : undefined;
}

/** A stable short hash of a message's JSON (identical before and after a Redis round trip). */
export function messageFingerprint(message: AgentMessage): string {
  return createHash("sha1").update(JSON.stringify(message)).digest("hex").slice(0, 16);
}

/** Text that introduces a summary in a request. */
export const SUMMARY_PREFIX =
  "[Summary of the earlier part of this thread. The original messages are not shown to save space.]";

/** How a summary reaches the model: as a user message at the start of the request. */
export function summaryAsUserMessage(summary: ContextSummaryMessage): UserMessage {
  return { role: "user", content: `${SUMMARY_PREFIX}\n\n${summary.summary}`, timestamp: summary.timestamp };
}

/** What a summarizer is asked to condense. */
export interface SummarizeInput {
  /** The summary the new one replaces (it covers the messages before `messages`). */
  previousSummary: string | undefined;
  messages: AgentMessage[];
  signal?: AbortSignal;
}

/** Makes a summary. May throw (the caller falls back to leaving old messages out). */
export type Summarizer = (input: SummarizeInput) => Promise<string>;

function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)} […]`;
}

function blocksText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((block: { type?: string; text?: string }) =>
      block.type === "text" ? (block.text ?? "") : block.type === "image" ? "[image]" : "",
    )
    .join("\n");
}

/** One line per message, as the summarizer reads the conversation. Custom messages are skipped. */
export function renderForSummary(messages: readonly AgentMessage[]): string[] {
  const lines: string[] = [];
  for (const message of messages) {
    const m = message as { role?: string; content?: unknown; toolName?: string; isError?: boolean };
    if (m.role === "user") lines.push(`[user] ${clip(blocksText(m.content), 2000)}`);
    else if (m.role === "toolResult")
      lines.push(
        `[result of ${m.toolName}${m.isError ? ", failed" : ""}] ${clip(blocksText(m.content), 600)}`,
      );
    else if (m.role === "assistant" && Array.isArray(m.content)) {
      for (const block of m.content as {
        type: string;
        text?: string;
        name?: string;
        arguments?: unknown;
      }[]) {
        if (block.type === "text" && block.text) lines.push(`[assistant] ${clip(block.text, 2000)}`);
        else if (block.type === "toolCall")
          lines.push(`[assistant calls ${block.name}] ${clip(JSON.stringify(block.arguments), 300)}`);
      }
    }
  }
  return lines;
}

const SUMMARY_SYSTEM_PROMPT = [
  "You condense a chat thread between people and an AI assistant that uses tools, so the assistant can continue without the original messages.",
  "Keep: who asked for what (by name), the task currently in progress and its next steps, decisions, facts, numbers, names of files, URLs, commands, and tool results that still matter, and open questions.",
  "Drop greetings and repetition. When a previous summary is given, merge it and the new messages into one summary.",
  "Answer with the summary only, as short Markdown bullet points.",
].join(" ");

/** Options of {@link createModelSummarizer}. */
export interface ModelSummarizerOptions {
  streamFn: StreamFn;
  model: Model;
  /** Spread into the request (headers, apiKey…); `maxTokens` and `signal` are set here. */
  streamOptions?: Omit<StreamOptions, "signal" | "maxTokens">;
  /** Most input tokens of the summary request (oldest lines are left out beyond it). */
  maxInputTokens: number;
  /** Output limit of the summary. Default 1 200 tokens. */
  maxSummaryTokens?: number;
  counter?: TokenCounter;
}

/** A {@link Summarizer} that makes one model call through the agent's stream function. */
export function createModelSummarizer(options: ModelSummarizerOptions): Summarizer {
  const counter = options.counter ?? createTokenCounter();
  const maxSummaryTokens = options.maxSummaryTokens ?? 1_200;
  return async ({ previousSummary, messages, signal }) => {
    const lines = renderForSummary(messages);
    const previous = previousSummary ? `Previous summary:\n${previousSummary}\n\n` : "";
    let room = options.maxInputTokens - counter.text(SUMMARY_SYSTEM_PROMPT) - counter.text(previous) - 64;
    // Keep the newest lines that fit; the oldest are the least likely to matter now.
    let first = lines.length;
    while (first > 0) {
      const cost = counter.text(lines[first - 1]!) + 1;
      if (cost > room) break;
      room -= cost;
      first--;
    }
    const omitted = first > 0 ? `[${first} older lines omitted]\n` : "";
    const prompt: UserMessage = {
      role: "user",
      content: `${previous}New messages:\n${omitted}${lines.slice(first).join("\n")}`,
      timestamp: Date.now(),
    };
    const request: StreamOptions = { ...options.streamOptions, maxTokens: maxSummaryTokens };
    if (signal) request.signal = signal;
    const stream = await options.streamFn(
      options.model,
      { systemPrompt: SUMMARY_SYSTEM_PROMPT, messages: [prompt] },
      request,
    );
    const final = await stream.result();
    if (final.stopReason === "error" || final.stopReason === "aborted")
      throw new Error(final.errorMessage ?? `summary request ended with ${final.stopReason}`);
    const text = final.content
      .map((block) => (block.type === "text" ? block.text : ""))
      .join("")
      .trim();
    if (text === "") throw new Error("the model returned an empty summary");
    return text;
  };
}
