import type { AgentMessage, ToolResultMessage, UserMessage } from "../agent/index.js";
import { tokensOf } from "./budget.js";
import type { ContextPolicy } from "./types.js";

export const roleOf = (message: AgentMessage) => (message as { role?: string }).role;
/** A request may start at any message but a tool result (it must follow its call). */
export const canStartAt = (message: AgentMessage | undefined) =>
  message !== undefined && roleOf(message) !== "toolResult";

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  return (content as { type: string; text?: string }[])
    .map((block) => (block.type === "text" ? (block.text ?? "") : "[image]"))
    .join("\n");
}

/** A copy of a message whose text keeps its head and tail (tool calls are left whole). */
export function shrink(message: AgentMessage, head: number, tail: number): AgentMessage {
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

/**
 * Step 2: shortens old large tool results in place (of `kept`, a copy) until the budget is met; the
 * latest batch (after the last assistant message) is kept whole. Returns the new total.
 */
export function shortenOldToolResults(
  policy: ContextPolicy,
  kept: AgentMessage[],
  total: number,
  budget: number,
): number {
  const { counter } = policy;
  let lastAssistant = kept.length - 1;
  while (lastAssistant >= 0 && roleOf(kept[lastAssistant]!) !== "assistant") lastAssistant--;
  let shortened = 0;
  for (let i = 0; i < lastAssistant && total > budget; i++) {
    const message = kept[i]!;
    if (roleOf(message) !== "toolResult" || counter.message(message) <= policy.large) continue;
    const short = shrink(message, policy.headChars, policy.tailChars);
    total += counter.message(short) - counter.message(message);
    kept[i] = short;
    shortened++;
  }
  if (shortened > 0) policy.emit({ type: "shortened", toolResults: shortened });
  return total;
}

/** Step 4 (last resort): leaves out older turns, then shortens whatever text is still long. */
export function squeeze(
  policy: ContextPolicy,
  head: AgentMessage[],
  kept: AgentMessage[],
  total: number,
  budget: number,
): AgentMessage[] {
  let dropped = 0;
  while (total > budget) {
    let next = 1;
    while (next < kept.length && !canStartAt(kept[next])) next++;
    if (next >= kept.length) break;
    total -= tokensOf(policy, kept.slice(0, next));
    dropped += next;
    kept = kept.slice(next);
  }
  if (dropped > 0) policy.emit({ type: "dropped", messages: dropped });
  for (const [h, t] of [
    [2_000, 500],
    [600, 200],
    [150, 50],
  ] as const) {
    if (total <= budget) break;
    kept = kept.map((message) => shrink(message, h, t));
    head = head.map((message) => shrink(message, h * 2, t * 2));
    total = tokensOf(policy, head) + tokensOf(policy, kept);
  }
  if (total > budget) policy.emit({ type: "over_budget", tokens: total, budget });
  return [...head, ...kept];
}
