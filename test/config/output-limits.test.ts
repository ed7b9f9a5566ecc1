import { describe, expect, it } from "vitest";
import { runsConfigFromEnv } from "../../src/app/runs-config.js";
import { ConfigError, parseEnv, validateConfig } from "../../src/config/index.js";

function problems(env: NodeJS.ProcessEnv): string[] {
  try {
    parseEnv(env);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
}

describe("output limits: tool results and replies", () => {
  it("default to 32 000 tool-result characters, 20 reply messages and 40 000 answer characters", () => {
    expect(runsConfigFromEnv(parseEnv({}))).toMatchObject({
      toolResultMaxChars: 32_000,
      replyMaxMessages: 20,
      replyMaxChars: 40_000,
    });
  });

  it("are read from the environment, and the config module wins", () => {
    const env = parseEnv({ TOOL_RESULT_MAX_CHARS: "5000", REPLY_MAX_MESSAGES: "5", REPLY_MAX_CHARS: "9000" });
    expect(runsConfigFromEnv(env)).toMatchObject({
      toolResultMaxChars: 5_000,
      replyMaxMessages: 5,
      replyMaxChars: 9_000,
    });
    const { config } = validateConfig("threadline.config.mjs", {
      toolResultMaxChars: 64_000,
      replyMaxMessages: 40,
    });
    expect(config).toBeDefined();
    expect(runsConfigFromEnv(env, config)).toMatchObject({
      toolResultMaxChars: 64_000,
      replyMaxMessages: 40,
      replyMaxChars: 9_000,
    });
  });

  it("refuse values too small to work, saying what is expected", () => {
    expect(
      problems({ TOOL_RESULT_MAX_CHARS: "500", REPLY_MAX_MESSAGES: "1", REPLY_MAX_CHARS: "many" }),
    ).toEqual([
      "TOOL_RESULT_MAX_CHARS must be at least 1000, for example 32000",
      "REPLY_MAX_MESSAGES must be at least 2, for example 20",
      "REPLY_MAX_CHARS must be a whole number, for example 40000",
    ]);
    expect(
      validateConfig("threadline.config.mjs", { toolResultMaxChars: 10, replyMaxMessages: 1 }).problems,
    ).toEqual([
      expect.stringMatching(/toolResultMaxChars must be at least 1000/),
      expect.stringMatching(/replyMaxMessages must be at least 2/),
    ]);
  });
});
