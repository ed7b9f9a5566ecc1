import { describe, expect, it } from "vitest";
import { argumentChanges, argumentsJson } from "../../src/chat/index.js";

describe("argumentChanges", () => {
  it("lists changed, added and removed fields as before → after, unchanged ones not at all", () => {
    expect(
      argumentChanges(
        { service: "api", env: "prod", force: true },
        { service: "api", env: "staging", dryRun: true },
      ),
    ).toEqual(['env: "prod" → "staging"', "dryRun: (added) → true", "force: true → (removed)"]);
  });

  it("compares nested values by their JSON and cuts long values", () => {
    const [line] = argumentChanges({ list: [1, 2] }, { list: [1, 2, "x".repeat(100)] });
    expect(line?.startsWith("list: [1,2] → [1,2,")).toBe(true);
    expect(line?.endsWith("…")).toBe(true);
    expect(argumentChanges({ a: { b: 1 } }, { a: { b: 1 } })).toEqual([]);
  });

  it("keeps at most eight lines and counts the rest", () => {
    const before = Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`k${i}`, i]));
    const after = Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`k${i}`, i + 1]));
    const lines = argumentChanges(before, after);
    expect(lines).toHaveLength(8);
    expect(lines.at(-1)).toBe("… and 5 more changes");
  });

  it("renders pretty JSON for an edit form", () => {
    expect(argumentsJson({ a: 1 })).toBe('{\n  "a": 1\n}');
  });
});
