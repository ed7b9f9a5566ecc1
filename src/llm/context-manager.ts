import type { AgentMessage, Tool, ToolResultMessage, UserMessage } from "../agent/index.js";
import {
  asContextSummary,
  CONTEXT_SUMMARY_ROLE,
  type ContextSummaryMessage,
  isContextSummary,
  messageFingerprint,
  type Summarizer,
  summaryAsUserMessage,
} from "./context-summary.js";
import { createTokenCounter, type TokenCounter } from "./context-tokens.js";

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

const roleOf = (message: AgentMessage) => (message as { role?: string }).role;
/** A request may start at any message but a tool result (it must follow its call). */
const canStartAt = (message: AgentMessage | undefined) =>
  message !== undefined && roleOf(message) !== "toolResult";

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  return (content as { type: string; text?: string }[])
    .map((block) => (block.type === "text" ? (block.text ?? "") : "[image]"))
    .join("\n");
}

/** A copy of a message whose text keeps its head and tail (tool calls are left whole). */
function shrink(message: AgentMessage, head: number, tail: number): AgentMessage {
  const role = roleOf(message);
  const cut = (text: string) =>
    text.length <= head + tail + 80
      ? text
      : `${text.slice(0, head)}\n[… ${text.length - head - tail} characters left out to fit the model's context window …]\n${text.slice(-tail)}`;
  if (role === "toolResult" || role === "user") {
    const m = message as ToolResultMessage | UserMessage;
    return { ...m, content: [{ type: "text", text: cut(textOf(m.content)) }] } as AgentMessage;
  }
  if (role === "assistant") {
    const m = message as Extract<AgentMessage, { role: "assistant" }>;
    return {
      ...m,
      content: m.content.map((block) =>
        block.type === "text" ? { ...block, text: cut(block.text) } : block,
      ),
    };
  }
  return message;
}

function note(text: string): UserMessage {
  return { role: "user", content: text, timestamp: 0 };
}

/** Splits stored summaries from the other messages and picks the newest summary that still matches. */
function splitSummaries(
  messages: readonly AgentMessage[],
  known: ContextSummaryMessage | undefined,
): { body: AgentMessage[]; summary: ContextSummaryMessage | undefined } {
  const body: AgentMessage[] = [];
  let summary = known;
  for (const message of messages) {
    const stored = asContextSummary(message);
    if (!stored) body.push(message);
    else if (!summary || stored.covered > summary.covered) summary = stored;
  }
  const matches =
    summary !== undefined &&
    summary.covered < body.length &&
    messageFingerprint(body[summary.covered]!) === summary.firstKept;
  // A summary that no longer matches the transcript is ignored; a new one is made if needed.
  return { body, summary: matches ? summary : undefined };
}

/** Where the kept part starts: the newest messages within `target` tokens, never at a tool result. */
function summaryCut(kept: readonly AgentMessage[], counter: TokenCounter, target: number): number {
  let cut = kept.length;
  let suffix = 0;
  for (let i = kept.length - 1; i >= 1; i--) {
    suffix += counter.message(kept[i]!);
    if (suffix > target) break;
    cut = i;
  }
  while (cut < kept.length && !canStartAt(kept[cut])) cut++;
  if (cut >= kept.length) {
    // Even the last turn alone is over the target: keep just that turn.
    cut = kept.length - 1;
    while (cut > 0 && !canStartAt(kept[cut])) cut--;
  }
  return cut;
}

/**
 * Keeps every request inside the model's context window, for the loop's `transformContext`. In order:
 * 1. a summary already made (in this run or stored in the transcript) replaces the messages it covers;
 * 2. the oldest large tool results are shortened to their head and tail (the latest batch is kept whole);
 * 3. the oldest turns are replaced by a new summary (one model call), persisted with
 *    `run.appendToTranscript` so later turns and runs reuse it, keeping about `keepRatio` of the budget
 *    for recent messages;
 * 4. as a last resort, older turns are left out and the remaining long texts shortened.
 * A request never starts with a tool result, so a tool call is never separated from its result. The
 * transcript itself is never changed. Never throws (on an internal error the messages pass unchanged).
 */
export function createContextManager(options: ContextManagerOptions): (run?: ContextRun) => ContextTransform {
  const counter = options.counter ?? createTokenCounter({ safetyFactor: options.safetyFactor ?? 1 });
  const reserve = options.reserveOutputTokens ?? Math.min(4_096, Math.floor(options.contextWindow / 8));
  const large = options.largeToolResultTokens ?? 1_000;
  const headChars = options.headChars ?? 1_200;
  const tailChars = options.tailChars ?? 400;
  const keepRatio = options.keepRatio ?? 0.5;
  const sum = (messages: readonly AgentMessage[]) => messages.reduce((n, m) => n + counter.message(m), 0);
  const emit = (event: ContextEvent) => {
    try {
      options.onEvent?.(event);
    } catch {
      // Observers must not break requests.
    }
  };

  /** Step 2: shortens old large tool results in place (of `kept`, a copy) until the budget is met. */
  const shortenOldToolResults = (kept: AgentMessage[], total: number, budget: number): number => {
    let lastAssistant = kept.length - 1;
    while (lastAssistant >= 0 && roleOf(kept[lastAssistant]!) !== "assistant") lastAssistant--;
    let shortened = 0;
    for (let i = 0; i < lastAssistant && total > budget; i++) {
      const message = kept[i]!;
      if (roleOf(message) !== "toolResult" || counter.message(message) <= large) continue;
      const short = shrink(message, headChars, tailChars);
      total += counter.message(short) - counter.message(message);
      kept[i] = short;
      shortened++;
    }
    if (shortened > 0) emit({ type: "shortened", toolResults: shortened });
    return total;
  };

  /** Step 4: leaves out older turns, then shortens whatever text is still long. */
  const squeeze = (head: AgentMessage[], kept: AgentMessage[], total: number, budget: number) => {
    let dropped = 0;
    while (total > budget) {
      let next = 1;
      while (next < kept.length && !canStartAt(kept[next])) next++;
      if (next >= kept.length) break;
      total -= sum(kept.slice(0, next));
      dropped += next;
      kept = kept.slice(next);
    }
    if (dropped > 0) emit({ type: "dropped", messages: dropped });
    for (const [h, t] of [
      [2_000, 500],
      [600, 200],
      [150, 50],
    ] as const) {
      if (total <= budget) break;
      kept = kept.map((message) => shrink(message, h, t));
      head = head.map((message) => shrink(message, h * 2, t * 2));
      total = sum(head) + sum(kept);
    }
    if (total > budget) emit({ type: "over_budget", tokens: total, budget });
    return [...head, ...kept];
  };

  return (run = {}) => {
    const fixed = counter.text(run.systemPrompt ?? "") + counter.tools(run.tools) + 32;
    const budget = Math.max(512, options.contextWindow - reserve - fixed);
    let latest: ContextSummaryMessage | undefined;

    /** Step 3: one summary of `covered` (after `start`), persisted; `undefined` when it could not be made. */
    const summarize = async (
      body: AgentMessage[],
      start: number,
      cut: number,
      signal: AbortSignal | undefined,
    ): Promise<ContextSummaryMessage | undefined> => {
      if (!options.summarize || signal?.aborted) return undefined;
      let summary: ContextSummaryMessage;
      try {
        const text = await options.summarize({
          previousSummary: latest?.summary,
          messages: body.slice(start, start + cut),
          ...(signal ? { signal } : {}),
        });
        summary = {
          role: CONTEXT_SUMMARY_ROLE,
          summary: text,
          covered: start + cut,
          firstKept: messageFingerprint(body[start + cut]!),
          timestamp: Date.now(),
        };
      } catch (error) {
        emit({ type: "summary_failed", error });
        return undefined;
      }
      let persisted = false;
      try {
        persisted = (await run.appendToTranscript?.(summary as unknown as AgentMessage)) ?? false;
      } catch (error) {
        emit({ type: "error", error });
      }
      emit({ type: "summarized", covered: summary.covered, persisted });
      return summary;
    };

    const trim = async (messages: AgentMessage[], signal?: AbortSignal): Promise<AgentMessage[]> => {
      const split = splitSummaries(messages, latest);
      const body = split.body;
      latest = split.summary;
      const start = latest?.covered ?? 0;
      let head: AgentMessage[] = latest ? [summaryAsUserMessage(latest)] : [];
      let kept = body.slice(start);
      let total = sum(head) + sum(kept);
      if (total <= budget) return [...head, ...kept];

      total = shortenOldToolResults(kept, total, budget);
      if (total <= budget) return [...head, ...kept];

      const cut = summaryCut(kept, counter, budget * keepRatio);
      if (cut > 0) {
        const summary = await summarize(body, start, cut, signal);
        if (summary) {
          latest = summary;
          head = [summaryAsUserMessage(summary)];
        } else {
          head = [
            ...head,
            note(
              `[${cut} earlier messages of this thread are not shown: it is longer than the model's context window.]`,
            ),
          ];
          emit({ type: "dropped", messages: cut });
        }
        kept = kept.slice(cut);
        total = sum(head) + sum(kept);
      }
      return total <= budget ? [...head, ...kept] : squeeze(head, kept, total, budget);
    };

    return async (messages, signal) => {
      try {
        return await trim(messages, signal);
      } catch (error) {
        emit({ type: "error", error });
        return messages.filter((message) => !isContextSummary(message));
      }
    };
  };
}
