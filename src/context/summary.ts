import type { AgentMessage } from "../agent/index.js";
import {
  asContextSummary,
  CONTEXT_SUMMARY_ROLE,
  type ContextSummaryMessage,
  messageFingerprint,
  type TokenCounter,
} from "../llm/index.js";
import { canStartAt } from "./fit.js";
import type { ContextPolicy, ContextRun } from "./types.js";

/** Splits stored summaries from the other messages and picks the newest summary that still matches. */
export function splitSummaries(
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
export function summaryCut(kept: readonly AgentMessage[], counter: TokenCounter, target: number): number {
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
 * Step 3: one summary of the `cut` messages after `start` of `body` (building on `previous`), persisted
 * with `run.appendToTranscript`; `undefined` when it could not be made.
 */
export async function summarizeOldest(
  policy: ContextPolicy,
  run: ContextRun,
  previous: ContextSummaryMessage | undefined,
  body: AgentMessage[],
  start: number,
  cut: number,
  signal: AbortSignal | undefined,
): Promise<ContextSummaryMessage | undefined> {
  if (!policy.summarize || signal?.aborted) return undefined;
  let summary: ContextSummaryMessage;
  try {
    const text = await policy.summarize({
      previousSummary: previous?.summary,
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
    policy.emit({ type: "summary_failed", error });
    return undefined;
  }
  let persisted = false;
  try {
    persisted = (await run.appendToTranscript?.(summary as unknown as AgentMessage)) ?? false;
  } catch (error) {
    policy.emit({ type: "error", error });
  }
  policy.emit({ type: "summarized", covered: summary.covered, persisted });
  return summary;
}
