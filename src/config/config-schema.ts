import { z } from "zod";
import { REACTION_ROLE_NAMES, REACTION_ROLES, type ReactionRoleName } from "../chat/index.js";
import type { AnyToolDefinition } from "../tools/index.js";
import {
  approvalPolicySchema,
  builtinToolsSchema,
  duplicateToolNames,
  flagSetting,
  isToolDefinition,
  mcpServerSchema,
  numberSetting,
  offOrCountSetting,
  oneOfSetting,
  TOOL_NAME_PATTERN,
  textListSetting,
  textRecordSetting,
  textSetting,
  wholeNumberSetting,
} from "../tools/index.js";
import type { SystemPromptContext, ThreadlineConfig } from "./config-module.js";

const price = (example: string) =>
  z
    .number({ error: `must be a price in USD per million tokens, for example ${example}` })
    .min(0, { error: `must be 0 or more, for example ${example}` });
const spendCap = z.strictObject({
  tokens: z
    .number({ error: "must be a number of tokens, for example 2000000" })
    .int({ error: "must be a whole number of tokens, for example 2000000" })
    .positive({ error: "must be greater than 0, for example 2000000" })
    .optional(),
  usd: z
    .number({ error: "must be an amount in US dollars, for example 5" })
    .positive({ error: "must be greater than 0, for example 5" })
    .optional(),
});

const queueMode = oneOfSetting(["one-at-a-time", "all"]);
/** One optional emoji name per role of the reaction table, its default as the example. */
const reactionNamesShape = Object.fromEntries(
  REACTION_ROLE_NAMES.map((role) => [role, textSetting(`"${REACTION_ROLES[role].emoji}"`).optional()]),
) as Record<ReactionRoleName, z.ZodOptional<ReturnType<typeof textSetting>>>;

const toolDefinition = z.custom<AnyToolDefinition>(isToolDefinition, {
  error: "must be a tool made with defineTool({ name, description, parameters, execute })",
});

/** Validates a config module's export; messages say what is expected, with an example. */
export const configSchema = z.strictObject({
  /** Replaces the default system prompt; a function is called once per run. */
  systemPrompt: z
    .union(
      [z.string(), z.custom<(ctx: SystemPromptContext) => string>((value) => typeof value === "function")],
      {
        error: 'must be text or a function ({ thread, requester }) => "…"',
      },
    )
    .optional(),
  /**
   * Model settings that code expresses better than environment variables; each wins over the matching
   * variable of the provider in use (`THREADLINE_MODEL_PROVIDER`; `OPENAI_*` for the default `openai`).
   */
  model: z
    .strictObject({
      /** Model name. Default: the provider's model variable (`OPENAI_MODEL`). */
      id: textSetting('"gpt-4o-mini"').optional(),
      /** Input window in tokens. Default: the provider's variable (`OPENAI_CONTEXT_WINDOW`), else known per model, else 16 384. */
      contextWindow: wholeNumberSetting("128000").optional(),
      /** Output limit sent with every request (and kept free in the window). Default: a quarter of the window, at most 16 384. */
      maxOutputTokens: wholeNumberSetting("4096").optional(),
      /** Time allowed until response headers arrive, per attempt (ms). Default: the provider's variable (`OPENAI_HEADER_TIMEOUT_MS`, 120 000). */
      headerTimeoutMs: wholeNumberSetting("120000").optional(),
      /** Abandon an answer after this long without any bytes (ms; 0 = off). Default: the provider's variable (`OPENAI_IDLE_TIMEOUT_MS`, 120 000). */
      idleTimeoutMs: z.number().int().min(0, { error: "must be 0 (off) or more" }).optional(),
      /** Cut an answer at this many characters. Default: the provider's variable (`OPENAI_MAX_OUTPUT_CHARS`, 200 000). */
      maxOutputChars: wholeNumberSetting("200000").optional(),
      /** `<think>…</think>` at the start of an answer: `"thinking"` or `"text"`. Default: the provider's variable (`OPENAI_THINK_TAGS`, thinking). */
      thinkTags: oneOfSetting(["thinking", "text"]).optional(),
      /** Sampling temperature. Default: not sent. */
      temperature: numberSetting("0.2").min(0, { error: "must be 0 or more" }).optional(),
      /** Reasoning effort for reasoning models. Default: not sent. */
      reasoning: oneOfSetting(["minimal", "low", "medium", "high", "xhigh", "max"]).optional(),
      /** Prices per million tokens, for the run footer's cost. */
      prices: z
        .strictObject({
          input: numberSetting("0.15").optional(),
          output: numberSetting("0.6").optional(),
          cacheRead: numberSetting("0.075").optional(),
        })
        .optional(),
      /** Extra HTTP headers on every model request. */
      headers: textRecordSetting('{ "x-team": "ops" }').optional(),
    })
    .optional(),
  /** Your tools, made with `defineTool`. */
  tools: z.array(toolDefinition, { error: "must be a list of tools made with defineTool(…)" }).optional(),
  /** Built-in tools: `fetchUrl` and `files` are on, `shell` is off unless enabled here. */
  builtinTools: builtinToolsSchema.optional(),
  /** MCP servers by name; their tools are called `<name>__<tool>` and need approval unless configured. */
  mcpServers: z
    .record(
      z.string().regex(/^[A-Za-z0-9_-]{1,30}$/, {
        error: 'names must be 1–30 letters, digits, "_" or "-", for example github',
      }),
      mcpServerSchema,
      {
        error: (issue) =>
          issue.code === "invalid_key"
            ? 'is not a valid server name: use 1–30 letters, digits, "_" or "-", for example github'
            : 'must be an object of servers, for example { github: { command: "npx", args: […] } }',
      },
    )
    .optional(),
  /** Approval policy by tool name (built-in, yours, or `<server>__<tool>`); wins over the tool's own. */
  approvals: z
    .record(z.string().regex(TOOL_NAME_PATTERN, { error: "must be a tool name" }), approvalPolicySchema, {
      error: 'must be an object of tool names to policies, for example { shell: "ask", fetch_url: "never" }',
    })
    .optional(),
  /** User ids that may approve tools and stop runs in every thread (besides the run's requester). */
  approvers: textListSetting('["U012ABCDEF"]').optional(),
  /** How long an approval card waits before it counts as denied. Default 10 minutes. */
  approvalTimeoutMs: wholeNumberSetting("600000").optional(),
  /** After this long without a decision the requester is mentioned once in the thread. Default 2 minutes; 0 = never. */
  approvalReminderMs: offOrCountSetting("120000").optional(),
  /** Only these users / channels (platform ids) may start runs or talk to a run. Default: everyone. */
  allow: z
    .strictObject({
      users: textListSetting('["U012ABCDEF"]').optional(),
      channels: textListSetting('["C012ABCDEF"]').optional(),
    })
    .optional(),
  /** Emoji names of the reaction vocabulary. */
  reactions: z.strictObject(reactionNamesShape).optional(),
  /** Where a reply to a busy agent goes by default. Default `"steer"`. */
  defaultDisposition: oneOfSetting(["steer", "followUp"]).optional(),
  /**
   * A reply to a busy agent that starts with this text is an **interrupt** (⚡): delivered now, cutting the
   * model's streaming answer. The prefix is removed from what the model reads. Default `"!!"`; `""` turns it off.
   */
  interruptPrefix: z.string({ error: 'must be text, for example "!!" (or "" to turn it off)' }).optional(),
  /** How many queued steering / follow-up messages reach the agent at once. Default `"one-at-a-time"`. */
  steeringMode: queueMode.optional(),
  /** How many queued follow-up messages reach the agent at once. Default `"one-at-a-time"`. */
  followUpMode: queueMode.optional(),
  /** Require a mention to start a run from a reply in an idle thread. Default false. */
  requireMentionWhenIdle: flagSetting().optional(),
  /**
   * Replies that stop the active run when they are the whole message (any case, punctuation ignored, so
   * "Stop!" and "stop." count; a longer sentence that contains "stop" never does). Replaces the default
   * list: `stop`, `please stop`, `stop please`, `stop now`, `stop it`.
   */
  stopWords: z
    .array(z.string().trim().min(1, "a stop word must not be empty"), {
      error: 'must be a list of words, for example ["stop", "halt"]',
    })
    .min(1, 'must name at least one word, for example ["stop"]')
    .optional(),
  /** Queued messages per thread before new ones are refused. Default 20. */
  queueCap: wholeNumberSetting("20").optional(),
  /** Limits of one run. */
  budgets: z
    .strictObject({
      maxTurns: wholeNumberSetting("50").optional(),
      maxWallMs: wholeNumberSetting("900000").optional(),
      maxTokens: wholeNumberSetting("200000").optional(),
    })
    .optional(),
  /**
   * Prices per model id in USD per million tokens, for the footer's cost, `/metrics` and the money caps.
   * A key also prices dated and routed variants (`gpt-4o` → `gpt-4o-2024-08-06`, `openai/gpt-4o`); these
   * win over the small built-in table, and a cost the provider reports (OpenRouter) wins over both.
   */
  prices: z
    .record(
      z.string(),
      z.strictObject({
        input: price("2.5"),
        cachedInput: price("1.25").optional(),
        output: price("10"),
        reasoning: price("10").optional(),
      }),
      {
        error:
          'must be an object of prices by model id, for example { "gpt-4o": { input: 2.5, output: 10 } }',
      },
    )
    .optional(),
  /**
   * Daily budgets (UTC days) in tokens and/or US dollars, per thread, per user (the run's requester), per
   * channel and per workspace / Discord server, held across all workers. A run that reaches one finishes
   * its current step and stops with a message naming the budget and when it resets. Default: none.
   */
  spendCaps: z
    .strictObject({
      thread: spendCap.optional(),
      user: spendCap.optional(),
      channel: spendCap.optional(),
      workspace: spendCap.optional(),
    })
    .optional(),
  /**
   * Runaway-loop guards of one run, each soft then hard: the first call past a limit gets an error result
   * the model reads, a further one stops the run. 0 turns a limit off.
   */
  loopGuard: z
    .strictObject({
      /** Calls of one tool with the same arguments per run; the Nth is refused. Default 3. */
      maxRepeats: offOrCountSetting("3").optional(),
      /** Tool calls in one model response. Default 20. */
      maxToolCallsPerTurn: offOrCountSetting("20").optional(),
      /** Tool calls in one run. Default 100. */
      maxToolCallsPerRun: offOrCountSetting("100").optional(),
    })
    .optional(),
  /** Show the run footer (turns, tool calls, tokens, cost). Default true. */
  footer: flagSetting().optional(),
  /**
   * Characters of text one tool result may carry into the transcript; a longer one keeps its start and
   * end, and the model is told what was cut. Default `TOOL_RESULT_MAX_CHARS` or 32 000 (at least 1 000).
   */
  toolResultMaxChars: wholeNumberSetting("32000")
    .min(1_000, { error: "must be at least 1000, for example 32000" })
    .optional(),
  /** Chat messages the bot posts for one run before it cuts the answer off. Default `REPLY_MAX_MESSAGES` or 20. */
  replyMaxMessages: wholeNumberSetting("20")
    .min(2, { error: "must be at least 2, for example 20" })
    .optional(),
  /** Characters of answer text the bot posts for one run before it cuts it off. Default `REPLY_MAX_CHARS` or 40 000. */
  replyMaxChars: wholeNumberSetting("40000").optional(),
  /** Root of the per-thread workspace directories. Default `THREADLINE_WORKSPACE_DIR` or `.threadline/workspaces`. */
  workspaceDir: textSetting('"/var/lib/threadline/workspaces"').optional(),
  /** How long threads are kept inside the model's context window. */
  context: z
    .strictObject({
      /** Summarize the oldest turns with one model call when a thread outgrows the window. Default true. */
      summarize: flagSetting().optional(),
    })
    .optional(),
  /** Slack-only settings. */
  slack: z
    .strictObject({
      // "Use this method to set up to four suggested prompts" (https://docs.slack.dev/reference/methods/assistant.threads.setSuggestedPrompts).
      suggestedPrompts: z
        .array(
          z.strictObject({
            title: textSetting('"What can you do?"'),
            message: textSetting('"What can you help me with?"'),
          }),
          {
            error:
              'must be a list like [{ title: "What can you do?", message: "What can you help me with?" }]',
          },
        )
        .max(4, { error: "Slack shows at most 4 suggested prompts" })
        .optional(),
      /** The heading above them. Default "Try asking". */
      suggestedPromptsTitle: textSetting('"Try asking"').optional(),
    })
    .optional(),
});

/** Known keys of the (nested) object schema at `path`, for "did you mean" hints. */
function knownKeysAt(path: readonly PropertyKey[]): string[] {
  let schema: z.ZodType = configSchema;
  for (const key of path) {
    let inner: z.ZodType = schema;
    while (inner instanceof z.ZodOptional || inner instanceof z.ZodPipe)
      inner = (inner instanceof z.ZodOptional ? inner.unwrap() : inner.def.in) as z.ZodType;
    if (inner instanceof z.ZodRecord) schema = inner.def.valueType as z.ZodType;
    else if (inner instanceof z.ZodObject)
      schema = (inner.shape as Record<string, z.ZodType>)[String(key)] ?? inner;
    else if (inner instanceof z.ZodUnion)
      schema = (inner.options as z.ZodType[]).find((option) => option instanceof z.ZodObject) ?? inner;
  }
  while (schema instanceof z.ZodOptional) schema = schema.unwrap() as z.ZodType;
  if (schema instanceof z.ZodUnion)
    schema = (schema.options as z.ZodType[]).find((option) => option instanceof z.ZodObject) ?? schema;
  return schema instanceof z.ZodObject ? Object.keys(schema.shape) : [];
}

function closest(word: string, candidates: string[]): string | undefined {
  const distance = (a: string, b: string) => {
    const row = Array.from({ length: b.length + 1 }, (_, i) => i);
    for (let i = 1; i <= a.length; i++) {
      let previous = row[0]!;
      row[0] = i;
      for (let j = 1; j <= b.length; j++) {
        const current = row[j]!;
        row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, previous + (a[i - 1] === b[j - 1] ? 0 : 1));
        previous = current;
      }
    }
    return row[b.length]!;
  };
  const ranked = candidates
    .map((candidate) => ({ candidate, d: distance(word.toLowerCase(), candidate.toLowerCase()) }))
    .sort((a, b) => a.d - b.d);
  return ranked[0] && ranked[0].d <= Math.max(2, Math.floor(word.length / 3))
    ? ranked[0].candidate
    : undefined;
}

const label = (path: readonly PropertyKey[]) =>
  path.length === 0 ? "the default export" : path.map(String).join(".");

/** Plain-words problems of a zod error, one per issue, prefixed with `source` (the file name). */
export function describeConfigIssues(source: string, error: z.ZodError): string[] {
  const problems: string[] = [];
  for (const issue of error.issues) {
    if (issue.code === "unrecognized_keys") {
      const known = knownKeysAt(issue.path);
      for (const key of issue.keys) {
        const hint = closest(key, known);
        problems.push(
          `${source}: ${label([...issue.path, key])} is not a setting Threadline knows${hint ? ` (did you mean "${hint}"?)` : known.length > 0 ? ` (known: ${known.join(", ")})` : ""}`,
        );
      }
      continue;
    }
    problems.push(`${source}: ${label(issue.path)} ${issue.message}`);
  }
  return problems;
}

/** Validates the export of a config module. @returns the config, or the problems in plain words. */
export function validateConfig(
  source: string,
  value: unknown,
): { config: ThreadlineConfig; problems: [] } | { config: undefined; problems: string[] } {
  if (value === null || typeof value !== "object" || Array.isArray(value))
    return {
      config: undefined,
      problems: [
        `${source}: the default export must be an object, for example export default defineConfig({ … })`,
      ],
    };
  const parsed = configSchema.safeParse(value);
  if (!parsed.success) return { config: undefined, problems: describeConfigIssues(source, parsed.error) };
  const config = value as ThreadlineConfig;
  const duplicates = duplicateToolNames(config.tools ?? []);
  if (duplicates.length > 0)
    return {
      config: undefined,
      problems: duplicates.map(
        (name) => `${source}: tools has more than one tool named "${name}"; tool names must be unique`,
      ),
    };
  // The parsed copy drops nothing we need, but the original keeps functions' identity (tools, policies).
  return { config, problems: [] };
}
