import { z } from "zod";
import { REACTION_ROLE_NAMES, type ReactionNames } from "../chat/index.js";
import {
  MODEL_PROVIDER_NAMES,
  optionalText,
  positiveIntSetting as positiveInt,
  providerEnvShape,
  urlSetting as url,
} from "../llm/index.js";
import { redisClusterNodes } from "./redis-cluster.js";

/** A comma-separated list (`A,B , C`) as trimmed, non-empty items; empty or unset = `[]`. */
const idList = z
  .string()
  .optional()
  .transform((value) =>
    (value ?? "")
      .split(",")
      .map((item) => item.trim())
      .filter((item) => item !== ""),
  );

const flag = (fallback: boolean) =>
  z
    .enum(["true", "false", "1", "0", "yes", "no", "on", "off", ""], {
      message: "must be true or false",
    })
    .optional()
    .transform((value) =>
      value === undefined || value === "" ? fallback : ["true", "1", "yes", "on"].includes(value),
    );

/** `steer=compass,stop=no_entry` → `{ steer: "compass", stop: "no_entry" }` (roles of the reaction vocabulary). */
const reactionNames = z
  .string()
  .optional()
  .transform((value, ctx) => {
    const names: Partial<ReactionNames> = {};
    for (const pair of (value ?? "").split(",").filter((item) => item.trim() !== "")) {
      const [role = "", name = ""] = pair.split("=").map((part) => part.trim());
      if (!(REACTION_ROLE_NAMES as readonly string[]).includes(role) || !/^[a-z0-9_+'-]+$/.test(name)) {
        ctx.addIssue({
          code: "custom",
          message: `must be role=emoji_name pairs (roles: ${REACTION_ROLE_NAMES.join(", ")}), for example steer=compass,stop=octagonal_sign`,
        });
        return names;
      }
      names[role as keyof ReactionNames] = name;
    }
    return names;
  });

/** Discord shard ids: `0,1` or ranges `0-3,8`; empty or unset = `[]` (all shards of the count). */
/** The most shard ids one range may name. */
const MAX_SHARD_RANGE = 10_000;

const shardIds = z
  .string()
  .optional()
  .transform((value, ctx) => {
    const ids: number[] = [];
    for (const item of (value ?? "").split(",").map((part) => part.trim())) {
      if (item === "") continue;
      const match = /^(\d+)(?:-(\d+))?$/.exec(item);
      if (!match) {
        ctx.addIssue({ code: "custom", message: "must be shard ids or ranges, for example 0,1 or 0-3" });
        return ids;
      }
      const first = Number(match[1]);
      const last = Number(match[2] ?? match[1]);
      if (last < first) {
        ctx.addIssue({
          code: "custom",
          message: `the range ${item} runs backwards; write it as ${last}-${first}`,
        });
        return ids;
      }
      // Discord caps a bot's shards far below this; a bigger range is a typo, not a plan.
      if (last - first >= MAX_SHARD_RANGE) {
        ctx.addIssue({
          code: "custom",
          message: `the range ${item} names more than ${MAX_SHARD_RANGE} shards`,
        });
        return ids;
      }
      for (let id = first; id <= last; id++) ids.push(id);
    }
    return [...new Set(ids)].sort((a, b) => a - b);
  });

/**
 * The environment variables Threadline reads (documented in .env.example). The model's come from the
 * provider table (`MODEL_PROVIDERS` in `src/llm/registry.ts`): every built-in provider's own variables
 * (`OPENAI_*`), and `THREADLINE_MODEL_PROVIDER` to pick the provider in use.
 */
export const envSchema = z.object({
  /** The model provider in use, by name (`openai`, the default). */
  THREADLINE_MODEL_PROVIDER: z.preprocess(
    (value) => (typeof value === "string" && value.trim() === "" ? undefined : value),
    z
      .enum(MODEL_PROVIDER_NAMES, {
        message: `must be ${MODEL_PROVIDER_NAMES.join(" or ")}, for example ${MODEL_PROVIDER_NAMES[0]}`,
      })
      .default(MODEL_PROVIDER_NAMES[0]),
  ),
  ...providerEnvShape(),
  REDIS_URL: url("redis://127.0.0.1:6379"),
  /** A Redis Cluster by its seed nodes (`host:port` or `redis://` / `rediss://` URLs); replaces REDIS_URL. */
  REDIS_CLUSTER_NODES: redisClusterNodes,
  THREADLINE_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9_-]+$/, { message: "may only contain letters, digits, _ and -, for example tl" })
    .default("tl"),
  SLACK_BOT_TOKEN: optionalText,
  SLACK_APP_TOKEN: optionalText,
  SLACK_SIGNING_SECRET: optionalText,
  SLACK_API_URL: url("https://slack.com/api/"),
  SLACK_ALLOWED_TEAMS: idList,
  SLACK_ALLOWED_CHANNELS: idList,
  SLACK_ALLOWED_USERS: idList,
  SLACK_ALLOWED_BOTS: idList,
  SLACK_DIRECT_MESSAGES: flag(true),
  SLACK_STREAMING: flag(true),
  /** 👍 / 👎 feedback buttons under each answer (Block Kit `feedback_buttons`). */
  SLACK_FEEDBACK: flag(true),
  /**
   * The app's `conversations.replies` limits: `non-marketplace` (distributed outside the Marketplace: 1 call
   * a minute, 15 messages a page) or `internal` (internal and Marketplace apps: Tier 3).
   */
  SLACK_HISTORY_TIER: z
    .enum(["non-marketplace", "internal"], {
      message: "must be non-marketplace or internal, for example non-marketplace",
    })
    .default("non-marketplace"),
  THREADLINE_APPROVERS: idList,
  THREADLINE_APPROVAL_TIMEOUT_MS: positiveInt(600_000, "600000"),
  THREADLINE_REACTIONS: reactionNames,
  THREADLINE_TOOLS_MODULE: optionalText,
  THREADLINE_CONFIG: optionalText,
  THREADLINE_WORKSPACE_DIR: optionalText,
  /**
   * How the `shell` tool isolates commands: `bwrap` (default; the shell is left out when bubblewrap cannot
   * run) or `none` (the operator's explicit choice of an unsandboxed shell). The config module's
   * `builtinTools.shell.sandbox` wins.
   */
  THREADLINE_SHELL_SANDBOX: z
    .enum(["bwrap", "none", ""], { message: "must be bwrap or none" })
    .optional()
    .transform((value) => (value === "" || value === undefined ? undefined : value)),
  /** The bubblewrap binary (a path, or a name on PATH). Default `bwrap`. */
  THREADLINE_BWRAP_PATH: optionalText,
  DISCORD_TOKEN: optionalText,
  DISCORD_API_URL: url("https://discord.com/api"),
  DISCORD_SHARD_COUNT: z
    .string()
    .trim()
    .optional()
    .transform((value) => (value ? Number(value) : undefined))
    .pipe(
      z
        .number({ message: "must be a whole number, for example 4" })
        .int({ message: "must be a whole number, for example 4" })
        .positive({ message: "must be greater than 0, for example 4" })
        .optional(),
    ),
  DISCORD_SHARD_IDS: shardIds,
  DISCORD_ALLOWED_GUILDS: idList,
  DISCORD_ALLOWED_CHANNELS: idList,
  DISCORD_ALLOWED_ROLES: idList,
  DISCORD_ALLOWED_USERS: idList,
  DISCORD_DIRECT_MESSAGES: flag(true),
  DISCORD_GLOBAL_RATE_LIMIT: positiveInt(50, "50"),
  DISCORD_EDIT_INTERVAL_MS: positiveInt(1000, "1000"),
  PORT: positiveInt(3000, "3000").refine((port) => port <= 65535, {
    message: "must be a port number (1–65535), for example 3000",
  }),
  /** Serve the local web playground even when Slack or Discord is configured (it always runs without them). */
  PLAYGROUND: flag(false),
  /** Interface the playground binds; default 127.0.0.1 (it has no login). 0.0.0.0 inside a container. */
  PLAYGROUND_HOST: z.string().trim().min(1).default("127.0.0.1"),
  /**
   * Host names the playground answers to besides localhost, 127.0.0.1 and [::1] (it has no login, so the
   * Host and Origin of requests are checked against this list whatever PLAYGROUND_HOST is): comma-separated
   * `name` (at the playground's port) or `name:port` (a published port that differs, a TLS proxy's 443).
   */
  PLAYGROUND_ALLOWED_HOSTS: idList.pipe(
    z.array(
      z.string().regex(/^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?)(?::\d{1,5})?$/, {
        message: "must be host names or host:port, for example bot.internal,localhost:8080",
      }),
    ),
  ),
  /** Port of the playground; default PORT (set it when Slack's HTTP mode already listens on PORT). */
  PLAYGROUND_PORT: z
    .string()
    .trim()
    .optional()
    .transform((value) => (value ? Number(value) : undefined))
    .pipe(
      z
        .number({ message: "must be a whole number, for example 3001" })
        .int({ message: "must be a whole number, for example 3001" })
        .positive({ message: "must be greater than 0, for example 3001" })
        .max(65535, { message: "must be a port number (1–65535), for example 3001" })
        .optional(),
    ),
  /**
   * Runs one worker process holds at once. A run holds its slot while it waits for the model, a tool or an
   * approval (up to the approval timeout), so this is high: waiting runs cost ~70 KiB each, not CPU.
   */
  WORKER_CONCURRENCY: positiveInt(200, "200"),
  /** Characters of text one tool result may carry into the transcript; the middle of a longer one is cut. */
  TOOL_RESULT_MAX_CHARS: positiveInt(32_000, "32000").refine((n) => n >= 1_000, {
    message: "must be at least 1000, for example 32000",
  }),
  /** Chat messages the bot posts for one run before it cuts the answer off (the notice included). */
  REPLY_MAX_MESSAGES: positiveInt(20, "20").refine((n) => n >= 2, {
    message: "must be at least 2, for example 20",
  }),
  /** Characters of answer text the bot posts for one run before it cuts the answer off. */
  REPLY_MAX_CHARS: positiveInt(40_000, "40000"),
  /** Interface of the ops server; unset = 127.0.0.1 (`0.0.0.0` in a container, for scrapers and published ports). */
  OPS_HOST: z.string().trim().min(1).optional(),
  /** Port of /healthz and /metrics (0 turns the ops server off). */
  OPS_PORT: z.coerce
    .number({ message: "must be a port number, for example 9464" })
    .int({ message: "must be a port number, for example 9464" })
    .min(0, { message: "must be a port number, for example 9464" })
    .max(65535, { message: "must be a port number, for example 9464" })
    .default(9464),
  /** Serve the BullMQ dashboard of the runs queue at /dashboard on the ops server (gateway and start). */
  DASHBOARD: flag(false),
  /** HTTP Basic password of the dashboard (any user name); unset = no login. */
  DASHBOARD_PASSWORD: optionalText,
  /** The dashboard only shows (default): retrying or removing run jobs by hand can break run invariants. */
  DASHBOARD_READ_ONLY: flag(true),
  /**
   * Deadline of a shutdown (SIGTERM/SIGINT), in ms: running runs get most of it to finish, then they are
   * aborted (another worker resumes them); a process still not done at the deadline exits anyway.
   */
  SHUTDOWN_TIMEOUT_MS: positiveInt(20_000, "20000"),
  LOG_LEVEL: z
    .enum(["trace", "debug", "info", "warn", "error", "fatal", "silent"], {
      message: "must be one of trace, debug, info, warn, error, fatal, silent, for example info",
    })
    .default("info"),
});

/** Parsed environment. */
export type Env = z.infer<typeof envSchema>;

/** Thrown when the configuration is invalid; `message` lists every problem in plain words. */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(
      `Threadline can't start, the configuration has ${problems.length === 1 ? "a problem" : `${problems.length} problems`}:\n${problems.map((p) => `  - ${p}`).join("\n")}`,
    );
    this.name = "ConfigError";
  }
}

/** Reads and validates the environment. @throws ConfigError listing every problem (values never echoed). */
export function parseEnv(env: NodeJS.ProcessEnv = process.env): Env {
  const result = envSchema.safeParse(env);
  const problems: string[] = result.success
    ? []
    : result.error.issues.map((issue) => `${issue.path.join(".")} ${issue.message}`);
  if (result.success) {
    const value = result.data;
    if (value.SLACK_BOT_TOKEN && !value.SLACK_APP_TOKEN && !value.SLACK_SIGNING_SECRET) {
      problems.push(
        "SLACK_BOT_TOKEN is set but neither SLACK_APP_TOKEN (Socket Mode, xapp-…) nor SLACK_SIGNING_SECRET (HTTP events) is",
      );
    }
    if ((value.SLACK_APP_TOKEN || value.SLACK_SIGNING_SECRET) && !value.SLACK_BOT_TOKEN) {
      problems.push("SLACK_APP_TOKEN / SLACK_SIGNING_SECRET is set but SLACK_BOT_TOKEN (xoxb-…) is missing");
    }
    if (value.REDIS_URL && value.REDIS_CLUSTER_NODES) {
      problems.push(
        "REDIS_URL and REDIS_CLUSTER_NODES are both set: set REDIS_URL for one Redis, or REDIS_CLUSTER_NODES for a Redis Cluster",
      );
    }
    problems.push(...discordShardProblems(value));
    if (problems.length === 0) return value;
  }
  throw new ConfigError(problems);
}

/** DISCORD_SHARD_IDS needs DISCORD_SHARD_COUNT, and every id must be below it. */
function discordShardProblems(value: Env): string[] {
  const ids = value.DISCORD_SHARD_IDS;
  if (ids.length === 0) return [];
  if (value.DISCORD_SHARD_COUNT === undefined) {
    return ["DISCORD_SHARD_IDS is set but DISCORD_SHARD_COUNT (the bot's total number of shards) is not"];
  }
  const count = value.DISCORD_SHARD_COUNT;
  return ids.some((id) => id >= count)
    ? [`DISCORD_SHARD_IDS must be below DISCORD_SHARD_COUNT (${count}): shard ids count from 0`]
    : [];
}
