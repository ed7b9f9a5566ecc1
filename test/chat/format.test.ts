import { describe, expect, it } from "vitest";
import {
  formatCost,
  formatDuration,
  formatOutcomeLine,
  formatRunFooter,
  formatToolLine,
  shortText,
} from "../../src/chat/index.js";

describe("formatDuration", () => {
  it.each([
    [0, "0.0s"],
    [40, "0.0s"],
    [400, "0.4s"],
    [1234, "1.2s"],
    [59_940, "59.9s"],
    [59_960, "1m 00s"],
    [123_000, "2m 03s"],
    [3_599_400, "59m 59s"],
    [3_900_000, "1h 05m"],
    [-5, "0.0s"],
    [Number.NaN, "0.0s"],
  ])("%d ms → %s", (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });
});

describe("formatToolLine", () => {
  it("shows running, succeeded and failed tools", () => {
    expect(formatToolLine("web_search", { state: "running" })).toBe("🔧 web_search …");
    expect(formatToolLine("web_search", { state: "succeeded", durationMs: 1234 })).toBe(
      "🔧 web_search ✓ 1.2s",
    );
    expect(formatToolLine("web_search", { state: "succeeded" })).toBe("🔧 web_search ✓");
    expect(
      formatToolLine("read", { state: "failed", error: "ENOENT: no such file *x*\n    at open (fs.js:1:1)" }),
    ).toBe("🔧 read ✗ ENOENT: no such file \\*x\\*");
    expect(formatToolLine("read", { state: "failed", error: "" })).toBe("🔧 read ✗ failed");
  });

  it("keeps error lines short", () => {
    const line = formatToolLine("read", { state: "failed", error: "e".repeat(1000) });
    expect(line.length).toBeLessThan(140);
    expect(line.endsWith("…")).toBe(true);
  });
});

describe("shortText", () => {
  it("keeps the first meaningful line, never a stack trace", () => {
    const error =
      "\n  TypeError: x is not a function\n    at run (/app/a.js:1:2)\n    at main (/app/b.js:3:4)";
    expect(shortText(error, 100)).toBe("TypeError: x is not a function");
    expect(shortText("a   b\tc", 100)).toBe("a b c");
    expect(shortText("abcdef", 4)).toBe("abc…");
  });
});

describe("formatRunFooter", () => {
  it("lists turns, tool calls, tokens and cost", () => {
    expect(
      formatRunFooter({ turns: 3, toolCalls: 2, inputTokens: 1000, outputTokens: 234, cost: 0.0042 }),
    ).toBe("3 turns · 2 tool calls · 1.2k tokens · $0.0042");
  });

  it("uses singulars and leaves out zero tool calls, zero tokens and unknown cost", () => {
    expect(formatRunFooter({ turns: 1, toolCalls: 1, inputTokens: 900, outputTokens: 50 })).toBe(
      "1 turn · 1 tool call · 950 tokens",
    );
    expect(formatRunFooter({ turns: 1, toolCalls: 0, inputTokens: 0, outputTokens: 0 })).toBe("1 turn");
    expect(
      formatRunFooter({
        turns: 12,
        toolCalls: 0,
        inputTokens: 2_000_000,
        outputTokens: 500_000,
        cost: 3.456,
      }),
    ).toBe("12 turns · 2.5M tokens · $3.46");
  });

  it.each([
    [0, "$0"],
    [0.00001, "<$0.0001"],
    [0.12345, "$0.12"],
    [1, "$1.00"],
  ])("formats cost %d as %s", (cost, text) => {
    expect(formatCost(cost)).toBe(text);
  });
});

describe("formatOutcomeLine", () => {
  const ada = { id: "U1", name: "Ada" };
  it.each([
    [{ kind: "completed" }, undefined],
    [{ kind: "stopped", by: ada }, "🛑 Stopped by Ada."],
    [{ kind: "stopped", by: ada, reason: "Taking too long." }, "🛑 Stopped by Ada — Taking too long."],
    [
      { kind: "stopped", by: undefined, reason: "The worker stopped; it will resume." },
      "🛑 The worker stopped; it will resume.",
    ],
    [{ kind: "stopped", by: undefined }, "🛑 Stopped."],
    [
      { kind: "budget", reason: "This run reached its limit of 20 turns." },
      "⚠️ This run reached its limit of 20 turns.",
    ],
    [{ kind: "failed", message: "Model unreachable.\n    at connect (net.js:1:1)" }, "⚠️ Model unreachable."],
  ] as const)("%j → %s", (outcome, line) => {
    expect(formatOutcomeLine(outcome)).toBe(line);
  });
});
