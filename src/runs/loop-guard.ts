import type { AgentLoopConfig, BeforeToolCallContext, BeforeToolCallResult } from "../agent/index.js";

/**
 * Limits on what the model may do with tools in one run. Each limit is soft first, then hard: the first
 * call past a limit gets an error result the model can read (so it can change course), and a further call
 * past the same limit stops the run after its turn. `0` turns a limit off.
 */
export interface LoopGuardLimits {
  /** Calls of one tool with the same arguments in one run; the Nth is refused. Default 3. */
  maxRepeats: number;
  /** Tool calls in one model response; the ones past the cap are refused. Default 20. */
  maxToolCallsPerTurn: number;
  /** Tool calls in one run; the ones past the cap are refused. Default 100. */
  maxToolCallsPerRun: number;
}

export const DEFAULT_LOOP_GUARD: LoopGuardLimits = {
  maxRepeats: 3,
  maxToolCallsPerTurn: 20,
  maxToolCallsPerRun: 100,
};

type BeforeToolCall = NonNullable<AgentLoopConfig["beforeToolCall"]>;

/** One run's loop guard: a `beforeToolCall` step and the reason it stopped the run, if it did. */
export interface LoopGuard {
  /** Refuses calls past a limit; never throws, never waits. Put it first in the chain. */
  beforeToolCall(ctx: BeforeToolCallContext): BeforeToolCallResult | undefined;
  /** Why the guard stopped the run (one short sentence for the chat), or undefined while it has not. */
  stopReason(): string | undefined;
}

/** Creates the guard of one run. Counts are per run (a resumed run starts counting again). */
export function createLoopGuard(limits: LoopGuardLimits = DEFAULT_LOOP_GUARD): LoopGuard {
  const repeats = new Map<string, number>();
  const warned = new Set<string>();
  let stop: string | undefined;
  let runCalls = 0;
  let turn: object | undefined;
  let turnCalls = 0;

  /** Soft the first time a limit is passed, hard (the run stops) the next time. */
  const refuse = (limit: string, soft: string, hard: string): BeforeToolCallResult => {
    if (!warned.has(limit)) {
      warned.add(limit);
      return { block: true, reason: soft };
    }
    stop ??= hard;
    return { block: true, reason: `${hard} The run stops here.` };
  };

  return {
    stopReason: () => stop,
    beforeToolCall({ assistantMessage, toolCall, args }) {
      if (stop) return { block: true, reason: `${stop} The run stops here.` };
      if (assistantMessage !== turn) {
        turn = assistantMessage;
        turnCalls = 0;
      }
      turnCalls++;
      runCalls++;
      const name = toolCall.name;
      if (limits.maxToolCallsPerTurn > 0 && turnCalls > limits.maxToolCallsPerTurn) {
        const cap = limits.maxToolCallsPerTurn;
        return refuse(
          "turn",
          `Refused: more than ${cap} tool calls in one response. Make at most ${cap} calls per response; the ones that fit the limit ran.`,
          `Stopped: the model kept making more than ${cap} tool calls in one response.`,
        );
      }
      if (limits.maxToolCallsPerRun > 0 && runCalls > limits.maxToolCallsPerRun) {
        const cap = limits.maxToolCallsPerRun;
        return refuse(
          "run",
          `Refused: this run reached its limit of ${cap} tool calls. Answer with what you have, without calling more tools.`,
          `Stopped: the run kept calling tools after its limit of ${cap} tool calls.`,
        );
      }
      if (limits.maxRepeats > 0) {
        const key = `${name}\u0000${stableJson(args)}`;
        const seen = (repeats.get(key) ?? 0) + 1;
        repeats.set(key, seen);
        if (seen >= limits.maxRepeats) {
          return refuse(
            `repeat:${key}`,
            `Refused: you are repeating yourself — this is call ${seen} of ${name} with the same arguments in this run, and it was not run. Use the results you already have, or try something different.`,
            `Stopped: the model kept calling ${name} with the same arguments.`,
          );
        }
      }
      return undefined;
    },
  };
}

/**
 * Runs `beforeToolCall` steps in order; the first that blocks decides, later ones are not asked (a refused
 * call never reaches an approval card). Each step's contract (may throw, may wait) is kept.
 */
export function chainBeforeToolCall(...steps: BeforeToolCall[]): BeforeToolCall {
  return async (ctx, signal) => {
    for (const step of steps) {
      const verdict = await step(ctx, signal);
      if (verdict?.block) return verdict;
    }
    return undefined;
  };
}

/** JSON with object keys sorted, so `{a, b}` and `{b, a}` are the same call. */
function stableJson(value: unknown): string {
  return JSON.stringify(value, (_key, item: unknown) => {
    if (item === null || typeof item !== "object" || Array.isArray(item)) return item;
    const sorted: Record<string, unknown> = {};
    for (const key of Object.keys(item).sort()) sorted[key] = (item as Record<string, unknown>)[key];
    return sorted;
  });
}
