/**
 * How long one large tool result blocks a worker's event loop (issue 12, item 9): token counting, the
 * context manager and the run layer's tool-result cap, for results of 64 KiB, 256 KiB and 1 MiB of one
 * repeated character, random words, base64 and random CJK text. Target: no single tool result blocks the
 * loop for more than 50 ms.
 *
 * All of that work is synchronous (the context manager awaits nothing unless it summarizes), so the time
 * of one call is the time the loop is blocked. Each cell is the worst of several samples, each on a
 * freshly generated text and a fresh counter (no cache helps). The baseline, measured in the same run on
 * the same text, is the JSON round trip (`stringify` + `parse`) of the raw tool-result message, which a
 * worker pays anyway to persist and load it; ratios are against it.
 *
 *   npm run bench:tokens
 *   npm run bench:tokens -- --samples 3     quicker
 *   npm run bench:tokens -- --legacy        also one unsliced o200k call on the 64 KiB texts (the old
 *                                           algorithm; takes seconds on the repeated character)
 */
import { countTokens } from "gpt-tokenizer/encoding/o200k_base";
import type { AgentMessage, ToolResultMessage } from "../src/agent/index.js";
import { createContextManager } from "../src/context/index.js";
import { createTokenCounter } from "../src/llm/context-tokens.js";
import { DEFAULT_TOOL_RESULT_MAX_CHARS, limitToolResult } from "../src/runs/tool-result-limit.js";
import { zeroUsage } from "../test/fakes/scripted-model.js";

const args = process.argv.slice(2);
const flag = (name: string) => args.includes(`--${name}`);
const option = (name: string, fallback: number) => {
  const index = args.indexOf(`--${name}`);
  return index >= 0 ? Number(args[index + 1]) : fallback;
};
const SAMPLES = option("samples", 5);
const TARGET_MS = 50;
const KIB = 1024;
const SIZES = [64 * KIB, 256 * KIB, 1024 * KIB];

let seed = 1;
const random = () => {
  seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
  return seed / 2_147_483_648;
};

const KINDS: Record<string, (length: number) => string> = {
  "one character": (length) => "a".repeat(length),
  "random words": (length) => {
    const parts: string[] = [];
    let size = 0;
    while (size < length) {
      const word = random()
        .toString(36)
        .slice(2, 4 + Math.floor(random() * 8));
      parts.push(word);
      size += word.length + 1;
    }
    return parts.join(random() < 0.1 ? "\n" : " ").slice(0, length);
  },
  base64: (length) => {
    const bytes = Buffer.alloc(Math.ceil((length * 3) / 4));
    for (let i = 0; i < bytes.length; i++) bytes[i] = Math.floor(random() * 256);
    return bytes.toString("base64").slice(0, length);
  },
  "random CJK": (length) => {
    const codes = new Uint16Array(length);
    for (let i = 0; i < length; i++) codes[i] = 0x4e00 + Math.floor(random() * 20_000);
    return Buffer.from(codes.buffer).toString("utf16le");
  },
};

function toolResult(text: string): ToolResultMessage {
  return {
    role: "toolResult",
    toolCallId: "call_1",
    toolName: "shell",
    content: [{ type: "text", text }],
    details: {},
    isError: false,
    timestamp: 1,
  };
}

function transcriptWith(result: ToolResultMessage): AgentMessage[] {
  return [
    { role: "user", content: "Alice: print the file", timestamp: 1 },
    {
      role: "assistant",
      content: [{ type: "toolCall", id: "call_1", name: "shell", arguments: { command: "cat blob" } }],
      api: "bench",
      provider: "bench",
      model: "bench",
      usage: zeroUsage(),
      stopReason: "toolUse",
      timestamp: 1,
    },
    result,
  ];
}

/** Wall and CPU time of one call (ms). On a busy machine wall time also holds time others had the CPU. */
interface Cost {
  wall: number;
  cpu: number;
}
const ZERO: Cost = { wall: 0, cpu: 0 };
const worst = (a: Cost, b: Cost): Cost => ({ wall: Math.max(a.wall, b.wall), cpu: Math.max(a.cpu, b.cpu) });

const time = (fn: () => unknown): Cost => {
  const cpu = process.cpuUsage();
  const started = performance.now();
  fn();
  const wall = performance.now() - started;
  const used = process.cpuUsage(cpu);
  return { wall, cpu: (used.user + used.system) / 1000 };
};

/** The context manager's work on one request: all synchronous when nothing is summarized. */
function manage(messages: AgentMessage[]): void {
  const transform = createContextManager({ contextWindow: 128_000, counter: createTokenCounter() })({
    systemPrompt: "You are a bench bot.",
  });
  let done = false;
  void transform(messages).then(() => {
    done = true;
  });
  if (done) throw new Error("the context manager awaited something");
}

interface Row {
  kind: string;
  size: number;
  baseline: Cost;
  count: Cost;
  manager: Cost;
  runPath: Cost;
  legacy?: Cost;
}

function measure(kind: string, size: number): Row {
  const row: Row = { kind, size, baseline: ZERO, count: ZERO, manager: ZERO, runPath: ZERO };
  // Each measurement gets its own text: the tokenizer caches pieces it has seen, which would flatter a
  // measurement that follows another on the same text.
  const fresh = () => KINDS[kind]!(size);
  for (let sample = 0; sample < SAMPLES; sample++) {
    const text = fresh();
    row.baseline = worst(
      row.baseline,
      time(() => JSON.parse(JSON.stringify(toolResult(text)))),
    );
    // Counting the raw result (no cap before it): the bounded counter on its own.
    row.count = worst(
      row.count,
      time(() => createTokenCounter().message(toolResult(text))),
    );
    // The context manager on a transcript holding the raw result.
    const transcript = transcriptWith(toolResult(fresh()));
    row.manager = worst(
      row.manager,
      time(() => manage(transcript)),
    );
    // What a run does: cap the result, persist it, then count and fit the next request.
    const raw = toolResult(fresh());
    row.runPath = worst(
      row.runPath,
      time(() => {
        const capped = limitToolResult(
          { content: raw.content, details: raw.details },
          { maxChars: DEFAULT_TOOL_RESULT_MAX_CHARS },
        );
        const message: ToolResultMessage = { ...raw, content: capped.content, details: capped.details };
        JSON.stringify(message);
        manage(transcriptWith(message));
      }),
    );
    if (flag("legacy") && size === SIZES[0] && sample === 0) {
      const legacy = fresh();
      row.legacy = time(() => countTokens(legacy, { disallowedSpecial: new Set() }));
    }
  }
  return row;
}

function main(): void {
  // Warm-up: JIT and the tokenizer's tables.
  for (const kind of Object.keys(KINDS)) {
    createTokenCounter().message(toolResult(KINDS[kind]!(32 * KIB)));
    manage(transcriptWith(toolResult(KINDS[kind]!(32 * KIB))));
  }
  const rows: Row[] = [];
  for (const size of SIZES) for (const kind of Object.keys(KINDS)) rows.push(measure(kind, size));

  const ms = (value: number) => (value < 10 ? value.toFixed(1) : value.toFixed(0));
  const cell = (cost: Cost, base?: Cost) =>
    `${ms(cost.wall)} / ${ms(cost.cpu)} ms${base ? ` (${(cost.cpu / Math.max(base.cpu, 0.001)).toFixed(1)}×)` : ""}`;
  const header = ["tool result", "size", "baseline: JSON round trip", "count", "context manager", "run path"];
  if (flag("legacy")) header.push("old: one o200k call");
  const lines = [header, header.map(() => "---")];
  for (const row of rows) {
    const cells = [
      row.kind,
      `${row.size / KIB} KiB`,
      cell(row.baseline),
      cell(row.count, row.baseline),
      cell(row.manager, row.baseline),
      cell(row.runPath, row.baseline),
    ];
    if (flag("legacy")) cells.push(row.legacy === undefined ? "" : cell(row.legacy, row.baseline));
    lines.push(cells);
  }
  console.log(
    `Worst of ${SAMPLES} samples per cell, wall / CPU time (ratio: CPU time to the baseline's); each call blocks the event loop for its whole wall time.\n`,
  );
  for (const line of lines) console.log(`| ${line.join(" | ")} |`);
  const longest = (pick: (cost: Cost) => number) =>
    Math.max(...rows.flatMap((row) => [row.count, row.manager, row.runPath].map(pick)));
  const cpu = longest((cost) => cost.cpu);
  const wall = longest((cost) => cost.wall);
  console.log(
    `\nLongest block: ${ms(wall)} ms wall, ${ms(cpu)} ms CPU — target ≤ ${TARGET_MS} ms ${cpu <= TARGET_MS ? "met" : "NOT met"} (by CPU time; wall time also counts other processes on a busy machine).`,
  );
}

main();
