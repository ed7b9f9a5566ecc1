import { countTokens } from "gpt-tokenizer/encoding/o200k_base";
import { describe, expect, it } from "vitest";
import type { AgentMessage, AssistantMessage, ToolResultMessage } from "../../src/agent/index.js";
import { createContextManager } from "../../src/context/index.js";
import {
  countTextTokens,
  createTokenCounter,
  MAX_TOKENIZED_CHARS,
  MAX_TOKENIZER_SLICE_CHARS,
  type SliceTokenizer,
} from "../../src/llm/context-tokens.js";
import { zeroUsage } from "../fakes/scripted-model.js";

const MIB = 1 << 20;
const exact = (text: string) => countTokens(text, { disallowedSpecial: new Set() });

/** A tokenizer that records every slice it is handed (and counts with the real encoding). */
function recording() {
  const slices: number[] = [];
  const tokenizer: SliceTokenizer = (slice) => {
    slices.push(slice.length);
    return exact(slice);
  };
  return {
    tokenizer,
    slices,
    /** Characters handed over since the last call, then forgets them. */
    take(): { chars: number; longest: number; calls: number } {
      const taken = slices.splice(0);
      return { chars: taken.reduce((a, b) => a + b, 0), longest: Math.max(0, ...taken), calls: taken.length };
    },
  };
}

function toolResult(text: string): ToolResultMessage {
  return {
    role: "toolResult",
    toolCallId: "c1",
    toolName: "shell",
    content: [{ type: "text", text }],
    isError: false,
    timestamp: 1,
  };
}

/** Pseudo-random base64-like text without spaces (deterministic). */
function noSpaces(length: number): string {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  let seed = 7;
  let text = "";
  for (let i = 0; i < length; i++) {
    seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
    text += alphabet[(seed >>> 16) % 64];
  }
  return text;
}

describe("token counting is linear and bounded", () => {
  it("estimates a 1 MiB run of one character sanely", () => {
    const tokens = createTokenCounter().text("a".repeat(MIB));
    // o200k packs 8 "a"s per token: 4 096 of them are 512 tokens.
    const expected = (exact("a".repeat(4_096)) * MIB) / 4_096;
    expect(tokens).toBeGreaterThan(expected * 0.9);
    expect(tokens).toBeLessThan(expected * 1.1);
  });

  it("never hands the tokenizer a long slice, nor more than a bounded amount per text or message", () => {
    const r = recording();
    const counter = createTokenCounter({ tokenizer: r.tokenizer });
    const inputs: [string, () => number][] = [
      ["1 MiB of one character", () => counter.text("x".repeat(MIB))],
      ["1 MiB without spaces", () => counter.text(noSpaces(MIB))],
      ["1 MiB of words", () => counter.text("lorem ipsum dolor ".repeat(MIB / 18))],
      ["a 1 MiB tool result", () => counter.message(toolResult("y".repeat(MIB)))],
      [
        "a message of 300 text blocks",
        () =>
          counter.message({
            role: "user",
            content: Array.from({ length: 300 }, () => ({ type: "text" as const, text: "z".repeat(4_000) })),
            timestamp: 1,
          }),
      ],
      [
        "a tool call with 1 MiB of arguments",
        () =>
          counter.message({
            role: "assistant",
            content: [{ type: "toolCall", id: "c1", name: "write", arguments: { text: "q".repeat(MIB) } }],
            api: "scripted",
            provider: "scripted",
            model: "scripted",
            usage: zeroUsage(),
            stopReason: "toolUse",
            timestamp: 1,
          } satisfies AssistantMessage),
      ],
    ];
    for (const [name, count] of inputs) {
      expect(count(), name).toBeGreaterThan(1_000);
      const work = r.take();
      expect(work.longest, name).toBeLessThanOrEqual(MAX_TOKENIZER_SLICE_CHARS);
      expect(work.chars, name).toBeLessThanOrEqual(MAX_TOKENIZED_CHARS);
      expect(work.calls, name).toBeGreaterThan(0);
    }
  });

  it("counts a text within the bound exactly, slicing only where the tokenizer splits anyway", () => {
    const r = recording();
    const text = "The deploy step failed because the runner timed out after 30 s. "
      .repeat(60)
      .slice(0, 4_000);
    expect(countTextTokens([text], r.tokenizer)).toBe(exact(text));
    const work = r.take();
    expect(work.chars).toBe(text.length);
    expect(work.calls).toBeGreaterThan(1);
    expect(work.longest).toBeLessThanOrEqual(MAX_TOKENIZER_SLICE_CHARS);
  });

  it("estimates long mixed texts within a few percent of the exact count", () => {
    for (const text of [
      noSpaces(40_000),
      "Step 12 is configured in deploy.yml line 12; raise the timeout. ".repeat(700),
      "漢字かな交じり文、その二。 ".repeat(1_500),
    ]) {
      const tokens = createTokenCounter().text(text);
      const truth = exact(text);
      expect(Math.abs(tokens / truth - 1)).toBeLessThan(0.05);
    }
  });

  it("counts a message once, however often it is asked", () => {
    const r = recording();
    const counter = createTokenCounter({ tokenizer: r.tokenizer });
    const message = toolResult("some output\n".repeat(100));
    const first = counter.message(message);
    const calls = r.take().calls;
    expect(calls).toBeGreaterThan(0);
    expect(counter.message(message)).toBe(first);
    expect(r.take().calls).toBe(0);
  });

  it("lets the context manager fit a thread holding a 1 MiB tool result without spaces", async () => {
    const transcript: AgentMessage[] = [
      { role: "user", content: "Alice: print the file", timestamp: 1 },
      {
        role: "assistant",
        content: [{ type: "toolCall", id: "c1", name: "shell", arguments: { command: "cat blob" } }],
        api: "scripted",
        provider: "scripted",
        model: "scripted",
        usage: zeroUsage(),
        stopReason: "toolUse",
        timestamp: 1,
      },
      toolResult("A".repeat(MIB)),
    ];
    const transform = createContextManager({ contextWindow: 16_384 })({ systemPrompt: "You are a bot." });
    const request = await transform(transcript);
    const counter = createTokenCounter();
    const total = request.reduce((n, m) => n + counter.message(m), 0);
    expect(total).toBeLessThanOrEqual(16_384);
    expect(request.at(-1)).toMatchObject({ role: "toolResult", toolCallId: "c1" });
  });
});
