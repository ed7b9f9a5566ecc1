/** The runs bench's settings and the helpers every part of it shares. */
import { fileURLToPath } from "node:url";
import { z } from "zod";
import {
  type AssistantMessageEventStream,
  createAssistantMessageEventStream,
  type Model,
  type ToolCall,
} from "../../src/agent/index.js";
import {
  type ChatOutbound,
  type ChatUser,
  type IncomingMessage,
  parseThreadId,
  type ThreadRef,
} from "../../src/chat/index.js";
import { createConvertToLlm } from "../../src/llm/index.js";
import {
  type AgentSetup,
  DEFAULT_LOOP_GUARD,
  type RunsConfig,
  type RunTool,
  type RunWorkerOptions,
  runsConfig,
  startRunWorker,
} from "../../src/runs/index.js";
import type { MemoryOutbound } from "../../test/fakes/memory-outbound.js";
import { emptyAssistantMessage } from "../../test/fakes/scripted-model.js";
import { percentile } from "../support/stats.js";

/** Model requests per streaming run (the last one answers without a tool call). */
export const TURNS = 10;
export const CHUNKS = 20;
export const CHUNK_DELAY_MS = 10;
/** The model's nominal time per turn. */
export const MODEL_MS = CHUNKS * CHUNK_DELAY_MS;
/** The whole bench stops (children killed, keys deleted) after this long. */
export const DEADLINE_MS = 230_000;
export const CHILD_DEADLINE_MS = 150_000;
export const WAIT_MS = 20_000;
/**
 * Warm-up runs of a streaming worker before its RSS baseline: enough for the JIT, few enough that the heap
 * they grow does not hide the measured runs' memory (RSS rarely shrinks after a collection).
 */
export const STREAM_WARMUP_RUNS = 10;

/** The bench's entry file, which the children re-invoke. */
export const SELF = fileURLToPath(new URL("../runs.bench.ts", import.meta.url));
export const alice: ChatUser = { id: "U_ALICE", name: "Alice" };

export const now = () => performance.now();
export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The `q` quantile (0–1) of `values`, nearest rank. */
export function quantile(values: readonly number[], q: number): number {
  return percentile(values, q * 100);
}

export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** One-shot signals by key; `fire` before `wait` is kept until someone waits. */
export class Signals<T = number> {
  private readonly fired = new Map<string, T>();
  private readonly waiting = new Map<string, (value: T) => void>();

  fire(key: string, value: T): void {
    const resolve = this.waiting.get(key);
    if (resolve) {
      this.waiting.delete(key);
      resolve(value);
    } else {
      this.fired.set(key, value);
    }
  }

  wait(key: string): Promise<T> {
    if (this.fired.has(key)) {
      const value = this.fired.get(key) as T;
      this.fired.delete(key);
      return Promise.resolve(value);
    }
    return new Promise((resolve) => this.waiting.set(key, resolve));
  }
}

export function gc(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

export function benchConfig(prefix: string): RunsConfig {
  // Every streaming turn calls the same no-op tool with the same arguments: the loop guard's repeat limit
  // would stop each run after its fourth turn (and the runs would not count).
  return runsConfig({
    prefix,
    budgets: { maxTurns: 1000, maxWallMs: 10 * 60_000 },
    loopGuard: { ...DEFAULT_LOOP_GUARD, maxRepeats: 0 },
  });
}

export function threadRef(name: string): ThreadRef {
  return { platform: "slack", workspace: "TBENCH", channel: "CBENCH", thread: name };
}

/** A message whose id is also its thread's name (so a worker can map jobs and requests to runs). */
export function chatMessage(
  id: string,
  text: string,
  options: { thread?: ThreadRef; mention?: boolean } = {},
) {
  const message: IncomingMessage = {
    id,
    thread: options.thread ?? threadRef(id),
    author: alice,
    text,
    attachments: [],
    mentionsBot: options.mention ?? true,
    sentAt: Date.now(),
  };
  return message;
}

export const okResult = { content: [{ type: "text" as const, text: "done" }], details: {} };
export const toolParameters = z.object({ value: z.string().optional() });

/** A `deploy` tool that needs an approval (`approval: "ask"`); `onRun` is told when it runs. */
export function deployTool(onRun: () => void = () => {}): RunTool {
  return {
    name: "deploy",
    description: "Needs an approval.",
    parameters: toolParameters,
    approval: "ask",
    execute: async () => {
      onRun();
      return okResult;
    },
  };
}

/**
 * A run worker on `redis` and `bull` whose runs all render into `chat`, with the bench's converter and
 * system prompt; `completions` fires by thread name when a run's job completes.
 */
export async function startBenchWorker(options: {
  redis: RunWorkerOptions["redis"];
  bull: RunWorkerOptions["bullConnection"];
  config: RunsConfig;
  chat: ChatOutbound;
  agent: Pick<AgentSetup, "model" | "streamFn" | "tools">;
  concurrency: number;
}) {
  const handle = await startRunWorker({
    redis: options.redis,
    bullConnection: options.bull,
    config: options.config,
    outbound: () => options.chat,
    agent: { ...options.agent, convertToLlm: createConvertToLlm(), systemPrompt: "You are a benchmark." },
    concurrency: options.concurrency,
  });
  const completions = new Signals();
  handle.worker.on("completed", (job) => completions.fire(parseThreadId(job.data.threadId).thread, now()));
  return { handle, completions };
}

/** The approval ids of the cards `chat` posts, by `key(the card's thread id)`. */
export function approvalCards(
  chat: MemoryOutbound,
  key: (threadId: string) => string = (threadId) => threadId,
): Signals<string> {
  const cards = new Signals<string>();
  chat.subscribe((op) => {
    if (op.op === "postApproval" && op.card) cards.fire(key(op.thread), op.card.approvalId);
  });
  return cards;
}

export function streamRunId(n: number, index: number): string {
  return `n${n}-${index}`;
}

/** Run `index` of the scale-out phase with `processes` workers; the names of that phase share {@link scaleoutRunPrefix}. */
export function scaleoutRunId(processes: number, index: number): string {
  return `${scaleoutRunPrefix(processes)}${index}`;
}

export function scaleoutRunPrefix(processes: number): string {
  return `x${processes}-`;
}

export function parkedRunId(index: number): string {
  return `park-${index}`;
}

/** A provider stream that answers at once (text, or one tool call). */
let instantCalls = 0;
export function instantResponse(
  model: Model,
  reply: { text: string } | { tool: string },
): AssistantMessageEventStream {
  const stream = createAssistantMessageEventStream();
  const message = emptyAssistantMessage(model);
  stream.push({ type: "start", partial: message });
  if ("text" in reply) {
    message.content.push({ type: "text", text: reply.text });
    stream.push({ type: "text_start", contentIndex: 0, partial: message });
    stream.push({ type: "text_delta", contentIndex: 0, delta: reply.text, partial: message });
    stream.push({ type: "text_end", contentIndex: 0, content: reply.text, partial: message });
    stream.push({ type: "done", reason: "stop", message });
    return stream;
  }
  const call: ToolCall = {
    type: "toolCall",
    id: `call-${++instantCalls}`,
    name: reply.tool,
    arguments: { value: "x" },
  };
  message.content.push(call);
  message.stopReason = "toolUse";
  stream.push({ type: "toolcall_start", contentIndex: 0, partial: message });
  stream.push({ type: "toolcall_delta", contentIndex: 0, delta: '{"value":"x"}', partial: message });
  stream.push({ type: "toolcall_end", contentIndex: 0, toolCall: call, partial: message });
  stream.push({ type: "done", reason: "toolUse", message });
  return stream;
}

export const INSTANT_MODEL: Model = {
  id: "instant",
  name: "Instant",
  api: "instant",
  provider: "instant",
  contextWindow: 100_000,
  maxTokens: 4_096,
};
