import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { envSchema, parseEnv } from "../../src/app/env.js";
import {
  CHAT_PLATFORMS,
  platformCredentials,
  platformEnvShape,
  wantedPlatforms,
  wantsPlayground,
} from "../../src/app/platforms.js";
import { type ConfigError, envSchema as processEnvSchema } from "../../src/config/index.js";

const SRC = resolve(import.meta.dirname, "../../src");

function problemsOf(vars: Record<string, string>): string[] {
  try {
    parseEnv(vars);
  } catch (err) {
    return (err as ConfigError).problems;
  }
  return [];
}

describe("the chat platform table", () => {
  it("lists Slack, Discord and the playground, each with its own variables, declared once", () => {
    // A new platform adds its entry; these three stay, in this order.
    expect(CHAT_PLATFORMS.map((platform) => platform.name).slice(0, 3)).toEqual([
      "slack",
      "discord",
      "playground",
    ]);
    const names = CHAT_PLATFORMS.flatMap((platform) => Object.keys(platform.env));
    expect(new Set(names).size).toBe(names.length);
    for (const platform of CHAT_PLATFORMS) {
      const prefix = platform.name.toUpperCase();
      for (const name of Object.keys(platform.env)) expect(name.startsWith(prefix)).toBe(true);
    }
    expect(Object.keys(platformEnvShape()).sort()).toEqual([...names].sort());
  });

  it("the environment schema is config's plus every platform's variables, and config names none of them", () => {
    const platformNames = Object.keys(platformEnvShape());
    expect(Object.keys(envSchema.shape).sort()).toEqual(
      [...Object.keys(processEnvSchema.shape), ...platformNames].sort(),
    );
    for (const name of platformNames) expect(Object.keys(processEnvSchema.shape)).not.toContain(name);
  });

  it("keeps the platforms' names, defaults and problems", () => {
    const env = parseEnv({});
    expect(env).toMatchObject({
      SLACK_DIRECT_MESSAGES: true,
      SLACK_STREAMING: true,
      SLACK_FEEDBACK: true,
      SLACK_HISTORY_TIER: "non-marketplace",
      SLACK_ALLOWED_TEAMS: [],
      DISCORD_GLOBAL_RATE_LIMIT: 50,
      DISCORD_EDIT_INTERVAL_MS: 1000,
      PLAYGROUND: false,
      PLAYGROUND_HOST: "127.0.0.1",
      PLAYGROUND_ALLOWED_HOSTS: [],
    });
    expect(env.SLACK_BOT_TOKEN).toBeUndefined();
    expect(problemsOf({ SLACK_BOT_TOKEN: "xoxb-1" })).toEqual([
      "SLACK_BOT_TOKEN is set but neither SLACK_APP_TOKEN (Socket Mode, xapp-…) nor SLACK_SIGNING_SECRET (HTTP events) is",
    ]);
    expect(problemsOf({ SLACK_SIGNING_SECRET: "s" })).toEqual([
      "SLACK_APP_TOKEN / SLACK_SIGNING_SECRET is set but SLACK_BOT_TOKEN (xoxb-…) is missing",
    ]);
    expect(problemsOf({ SLACK_HISTORY_TIER: "gold", DISCORD_SHARD_IDS: "1" })).toEqual([
      "SLACK_HISTORY_TIER must be non-marketplace or internal, for example non-marketplace",
    ]);
    // Problems across variables come with the others': Redis's first, then each platform's in table order.
    expect(
      problemsOf({
        REDIS_URL: "redis://a:6379",
        REDIS_CLUSTER_NODES: "b:7000",
        SLACK_APP_TOKEN: "xapp-1",
        DISCORD_SHARD_IDS: "1",
      }),
    ).toEqual([
      "REDIS_URL and REDIS_CLUSTER_NODES are both set: set REDIS_URL for one Redis, or REDIS_CLUSTER_NODES for a Redis Cluster",
      "SLACK_APP_TOKEN / SLACK_SIGNING_SECRET is set but SLACK_BOT_TOKEN (xoxb-…) is missing",
      "DISCORD_SHARD_IDS is set but DISCORD_SHARD_COUNT (the bot's total number of shards) is not",
    ]);
  });

  it("builds the configured platforms, and the playground when asked for or when no other is", () => {
    const wanted = (vars: Record<string, string>) => wantedPlatforms(parseEnv(vars)).map((p) => p.name);
    expect(wanted({})).toEqual(["playground"]);
    expect(wanted({ SLACK_BOT_TOKEN: "xoxb-1", SLACK_APP_TOKEN: "xapp-1" })).toEqual(["slack"]);
    expect(wanted({ SLACK_BOT_TOKEN: "xoxb-1", SLACK_APP_TOKEN: "xapp-1", DISCORD_TOKEN: "t" })).toEqual([
      "slack",
      "discord",
    ]);
    expect(wanted({ DISCORD_TOKEN: "t", PLAYGROUND: "1" })).toEqual(["discord", "playground"]);
    expect(wanted({ PLAYGROUND: "1" })).toEqual(["playground"]);
    expect(wantsPlayground(parseEnv({ DISCORD_TOKEN: "t" }))).toBe(false);
    expect(platformCredentials()).toMatch(/^SLACK_BOT_TOKEN or DISCORD_TOKEN\b/);
  });

  it("outside the platform modules, src/app and src/config name no platform variable in code", () => {
    const code = (file: string) =>
      readFileSync(file, "utf8")
        .replace(/\/\*[\s\S]*?\*\//g, "")
        .replace(/(^|\s)\/\/.*$/gm, "$1");
    const platformVariable = /\b(?:SLACK|DISCORD|PLAYGROUND)(?:_[A-Z_]+)?\b/;
    const offenders = ["app", "config", "runs"].flatMap((folder) =>
      readdirSync(join(SRC, folder))
        .filter((name) => name.endsWith(".ts") && !name.endsWith("-platform.ts"))
        .flatMap((name) =>
          code(join(SRC, folder, name))
            .split("\n")
            .filter((line) => platformVariable.test(line))
            .map((line) => `${folder}/${name}: ${line.trim()}`),
        ),
    );
    expect(offenders).toEqual([]);
  });
});
