import { describe, expect, it } from "vitest";
import { DEFAULT_HISTORY_LIMITS, historyWindow } from "../../src/chat/index.js";

describe("historyWindow", () => {
  it("admits texts until the message limit, then nothing more", () => {
    const window = historyWindow({ maxMessages: 2, maxChars: 1000 });
    expect(["c", "b", "a"].map((text) => window.admit(text))).toEqual([true, true, false]);
  });

  it("stops at the first text past the character limit, so the kept history stays contiguous", () => {
    const window = historyWindow({ maxMessages: 10, maxChars: 5 });
    // "xxxx" fits (4), "yy" would make 6, and "z" (older still) is not taken either: no gap in the middle.
    expect(["xxxx", "yy", "z"].map((text) => window.admit(text))).toEqual([true, false, false]);
  });

  it("defaults to the 30 messages and 8,000 characters both adapters documented", () => {
    expect(DEFAULT_HISTORY_LIMITS).toEqual({ maxMessages: 30, maxChars: 8000 });
  });
});
