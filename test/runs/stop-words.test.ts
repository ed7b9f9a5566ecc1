import { describe, expect, it } from "vitest";
import { runsConfigFromEnv } from "../../src/app/runs-config.js";
import { parseEnv } from "../../src/config/index.js";
import { DEFAULT_STOP_WORDS, isStopCommand } from "../../src/runs/index.js";

/** Issue 15 item 8 (and 12's "same rule for all stops"): what counts as a stop word. */
describe("stop words", () => {
  it("accepts the obvious variants of the defaults: case, punctuation, a short polite form", () => {
    for (const text of [
      "stop",
      "Stop!",
      "stop.",
      "STOP",
      "  stop  ",
      "please stop",
      "Stop, please!",
      "stop now",
      "Stop it.",
    ]) {
      expect({ text, stops: isStopCommand(text) }).toEqual({ text, stops: true });
    }
  });

  it("never a longer sentence that merely contains 'stop'", () => {
    for (const text of [
      "stop the deploy after step 2",
      "don't stop",
      "please don't stop",
      "stopwatch",
      "bus stop",
      "",
      "!!",
    ]) {
      expect({ text, stops: isStopCommand(text) }).toEqual({ text, stops: false });
    }
  });

  it("is configurable in the config module, and the list replaces the defaults", () => {
    const config = runsConfigFromEnv(parseEnv({}), { stopWords: ["halt", "arrête"] });
    expect(config.stopWords).toEqual(["halt", "arrête"]);
    expect(isStopCommand("Halt!", config.stopWords)).toBe(true);
    expect(isStopCommand("Arrête.", config.stopWords)).toBe(true);
    expect(isStopCommand("stop", config.stopWords)).toBe(false);
    expect(runsConfigFromEnv(parseEnv({})).stopWords).toEqual(DEFAULT_STOP_WORDS);
  });
});
