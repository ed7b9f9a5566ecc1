import { describe, expect, it } from "vitest";
import { parseEnv } from "../../src/app/env.js";
import type { ConfigError } from "../../src/config/index.js";

describe("Discord settings in the environment", () => {
  it("defaults to one shard, open access, DMs on, Discord's global limit and a 1 s edit interval", () => {
    const env = parseEnv({ DISCORD_TOKEN: "token" });
    expect(env.DISCORD_SHARD_COUNT).toBeUndefined();
    expect(env.DISCORD_SHARD_IDS).toEqual([]);
    expect([env.DISCORD_ALLOWED_GUILDS, env.DISCORD_ALLOWED_CHANNELS, env.DISCORD_ALLOWED_ROLES]).toEqual([
      [],
      [],
      [],
    ]);
    expect(env.DISCORD_ALLOWED_USERS).toEqual([]);
    expect(env.DISCORD_DIRECT_MESSAGES).toBe(true);
    expect(env.DISCORD_GLOBAL_RATE_LIMIT).toBe(50);
    expect(env.DISCORD_EDIT_INTERVAL_MS).toBe(1000);
  });

  it("reads shard ids and ranges, and the access lists", () => {
    const env = parseEnv({
      DISCORD_SHARD_COUNT: "8",
      DISCORD_SHARD_IDS: "4-6, 1",
      DISCORD_ALLOWED_GUILDS: "111, 222",
      DISCORD_ALLOWED_ROLES: "333",
      DISCORD_DIRECT_MESSAGES: "false",
    });
    expect(env.DISCORD_SHARD_COUNT).toBe(8);
    expect(env.DISCORD_SHARD_IDS).toEqual([1, 4, 5, 6]);
    expect(env.DISCORD_ALLOWED_GUILDS).toEqual(["111", "222"]);
    expect(env.DISCORD_ALLOWED_ROLES).toEqual(["333"]);
    expect(env.DISCORD_DIRECT_MESSAGES).toBe(false);
  });

  it("refuses a backwards range and a range too big to be meant, with a config error instead of a crash", () => {
    const problems = (vars: Record<string, string>) => {
      try {
        parseEnv(vars);
        return [];
      } catch (err) {
        return (err as ConfigError).problems.join("\n");
      }
    };
    expect(problems({ DISCORD_SHARD_COUNT: "8", DISCORD_SHARD_IDS: "3-1" })).toContain(
      "runs backwards; write it as 1-3",
    );
    expect(problems({ DISCORD_SHARD_COUNT: "8", DISCORD_SHARD_IDS: "0-50000000" })).toContain(
      "more than 10000 shards",
    );
  });

  it("explains inconsistent shard settings", () => {
    const problems = (vars: Record<string, string>) => {
      try {
        parseEnv(vars);
        return [];
      } catch (err) {
        return (err as ConfigError).problems;
      }
    };
    expect(problems({ DISCORD_SHARD_IDS: "1" })).toEqual([
      "DISCORD_SHARD_IDS is set but DISCORD_SHARD_COUNT (the bot's total number of shards) is not",
    ]);
    expect(problems({ DISCORD_SHARD_COUNT: "2", DISCORD_SHARD_IDS: "0-2" })).toEqual([
      "DISCORD_SHARD_IDS must be below DISCORD_SHARD_COUNT (2): shard ids count from 0",
    ]);
    expect(problems({ DISCORD_SHARD_COUNT: "0" })).toEqual([
      "DISCORD_SHARD_COUNT must be greater than 0, for example 4",
    ]);
    expect(problems({ DISCORD_SHARD_IDS: "one" })).toEqual([
      "DISCORD_SHARD_IDS must be shard ids or ranges, for example 0,1 or 0-3",
    ]);
  });
});
