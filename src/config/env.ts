import { z } from "zod";

const optionalText = z
  .string()
  .trim()
  .transform((value) => (value === "" ? undefined : value))
  .optional();

const url = (example: string) =>
  z
    .string()
    .trim()
    .refine((value) => value === "" || URL.canParse(value), {
      message: `must be a URL, for example ${example}`,
    })
    .transform((value) => (value === "" ? undefined : value))
    .optional();

const positiveInt = (fallback: number, example: string) =>
  z.coerce
    .number({ message: `must be a whole number, for example ${example}` })
    .int({ message: `must be a whole number, for example ${example}` })
    .positive({ message: `must be greater than 0, for example ${example}` })
    .default(fallback);

/** The environment variables Threadline reads (documented in .env.example). */
export const envSchema = z.object({
  OPENAI_API_KEY: optionalText,
  OPENAI_BASE_URL: url("http://localhost:11434/v1"),
  OPENAI_MODEL: z.string().trim().min(1).default("gpt-4o-mini"),
  REDIS_URL: url("redis://127.0.0.1:6379"),
  THREADLINE_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9_-]+$/, { message: "may only contain letters, digits, _ and -, for example tl" })
    .default("tl"),
  SLACK_BOT_TOKEN: optionalText,
  SLACK_APP_TOKEN: optionalText,
  SLACK_SIGNING_SECRET: optionalText,
  SLACK_API_URL: url("https://slack.com/api/"),
  DISCORD_TOKEN: optionalText,
  DISCORD_API_URL: url("https://discord.com/api"),
  PORT: positiveInt(3000, "3000"),
  WORKER_CONCURRENCY: positiveInt(50, "50"),
  LOG_LEVEL: z.enum(["trace", "debug", "info", "warn", "error", "fatal", "silent"]).default("info"),
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
    if (problems.length === 0) return value;
  }
  throw new ConfigError(problems);
}
