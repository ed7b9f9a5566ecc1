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
export const idListSetting = z
  .string()
  .optional()
  .transform((value) =>
    (value ?? "")
      .split(",")
      .map((item) => item.trim())
      .filter((item) => item !== ""),
  );

const idList = idListSetting;

/** A true/false switch (`true`/`1`/`yes`/`on`, `false`/`0`/`no`/`off`); empty or unset = `fallback`. */
export const flagSetting = (fallback: boolean) =>
  z
    .enum(["true", "false", "1", "0", "yes", "no", "on", "off", ""], {
      message: "must be true or false",
    })
    .optional()
    .transform((value) =>
      value === undefined || value === "" ? fallback : ["true", "1", "yes", "on"].includes(value),
    );

const flag = flagSetting;

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

/**
 * The environment variables every Threadline process reads (documented in .env.example). The model's come
 * from the provider table (`MODEL_PROVIDERS` in `src/llm/registry.ts`): every built-in provider's own
 * variables (`OPENAI_*`), and `THREADLINE_MODEL_PROVIDER` to pick the provider in use. The chat platforms'
 * variables (`SLACK_*`, `DISCORD_*`, `PLAYGROUND*`) are declared by the platforms themselves and added by
 * `src/app/env.ts`, which extends this schema with every entry of the platform table (`CHAT_PLATFORMS`).
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
  /** The HTTP port of Slack's HTTP events and, unless PLAYGROUND_PORT is set, of the playground. */
  PORT: positiveInt(3000, "3000").refine((port) => port <= 65535, {
    message: "must be a port number (1–65535), for example 3000",
  }),
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

/** Parsed environment (without the chat platforms' variables, which `src/app/env.ts` adds). */
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
  return parseEnvWith(envSchema, env);
}

/**
 * Reads and validates the environment with `schema`: {@link envSchema} extended with more variables (the
 * chat platforms', in `src/app/env.ts`). Besides each variable's own problems, `checks` report problems
 * across variables (one needs another); they run only when every variable is valid.
 * @throws ConfigError listing every problem (values never echoed).
 */
export function parseEnvWith<T extends Env>(
  schema: z.ZodType<T, unknown>,
  env: NodeJS.ProcessEnv,
  checks: readonly ((value: T) => readonly string[])[] = [],
): T {
  const result = schema.safeParse(env);
  const problems: string[] = result.success
    ? []
    : result.error.issues.map((issue) => `${issue.path.join(".")} ${issue.message}`);
  if (result.success) {
    const value = result.data;
    if (value.REDIS_URL && value.REDIS_CLUSTER_NODES) {
      problems.push(
        "REDIS_URL and REDIS_CLUSTER_NODES are both set: set REDIS_URL for one Redis, or REDIS_CLUSTER_NODES for a Redis Cluster",
      );
    }
    for (const check of checks) problems.push(...check(value));
    if (problems.length === 0) return value;
  }
  throw new ConfigError(problems);
}
