import type { AgentMessage, UserMessage } from "../agent/index.js";
import { type ContextSummaryMessage, isContextSummary, summaryAsUserMessage } from "../llm/index.js";
import { contextPolicy, messageBudget, tokensOf } from "./budget.js";
import { shortenOldToolResults, squeeze } from "./fit.js";
import { splitSummaries, summarizeOldest, summaryCut } from "./summary.js";
import type { ContextManagerOptions, ContextPolicy, ContextRun, ContextTransform } from "./types.js";

function note(text: string): UserMessage {
  return { role: "user", content: text, timestamp: 0 };
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
  const policy = contextPolicy(options);
  return (run = {}) => {
    const fitRequest = createRunFit(policy, run);
    return async (messages, signal) => {
      try {
        return await fitRequest(messages, signal);
      } catch (error) {
        policy.emit({ type: "error", error });
        return messages.filter((message) => !isContextSummary(message));
      }
    };
  };
}

/** One run's steps 1–4; remembers the latest summary between the run's requests. */
function createRunFit(policy: ContextPolicy, run: ContextRun): ContextTransform {
  const budget = messageBudget(policy, run);
  let latest: ContextSummaryMessage | undefined;
  return async (messages, signal) => {
    const split = splitSummaries(messages, latest);
    const body = split.body;
    latest = split.summary;
    const start = latest?.covered ?? 0;
    let head: AgentMessage[] = latest ? [summaryAsUserMessage(latest)] : [];
    let kept = body.slice(start);
    let total = tokensOf(policy, head) + tokensOf(policy, kept);
    if (total <= budget) return [...head, ...kept];

    total = shortenOldToolResults(policy, kept, total, budget);
    if (total <= budget) return [...head, ...kept];

    const cut = summaryCut(kept, policy.counter, budget * policy.keepRatio);
    if (cut > 0) {
      const summary = await summarizeOldest(policy, run, latest, body, start, cut, signal);
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
        policy.emit({ type: "dropped", messages: cut });
      }
      kept = kept.slice(cut);
      total = tokensOf(policy, head) + tokensOf(policy, kept);
    }
    return total <= budget ? [...head, ...kept] : squeeze(policy, head, kept, total, budget);
  };
}
