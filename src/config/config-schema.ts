import { z } from "zod";
import { REACTION_ROLE_NAMES, REACTION_ROLES, type ReactionRoleName } from "../chat/index.js";
import {
  approvalNeedSchema,
  approvalPolicySchema,
  duplicateToolNames,
  isToolDefinition,
  TOOL_NAME_PATTERN,
} from "../tools/index.js";
import type { ThreadlineConfig } from "./config-module.js";

const text = (example: string) =>
  z
    .string({ error: `must be text, for example ${example}` })
    .trim()
    .min(1, { error: `must not be empty, for example ${example}` });
const bool = () => z.boolean({ error: "must be true or false" });
const wholeNumber = (example: string) =>
  z
    .number({ error: `must be a number, for example ${example}` })
    .int({ error: `must be a whole number, for example ${example}` })
    .positive({ error: `must be greater than 0, for example ${example}` });
const offOrCount = (example: string) =>
  z
    .number({ error: `must be a number, for example ${example} (0 = off)` })
    .int({ error: `must be a whole number, for example ${example} (0 = off)` })
    .min(0, { error: `must be 0 (off) or more, for example ${example}` });
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
const number = (example: string) => z.number({ error: `must be a number, for example ${example}` });
const oneOf = <const T extends readonly [string, ...string[]]>(values: T) =>
  z.enum(values, { error: `must be one of ${values.map((v) => `"${v}"`).join(", ")}` });
const textList = (example: string) =>
  z.array(z.string({ error: "must be text" }), { error: `must be a list of texts, for example ${example}` });
const textRecord = (example: string) =>
  z.record(z.string(), z.string({ error: "must be text" }), {
    error: `must be an object of texts, for example ${example}`,
  });
const fn = (what: string) =>
  z.custom<(...args: never[]) => unknown>((value) => typeof value === "function", { error: what });

const queueMode = oneOf(["one-at-a-time", "all"]);
/** One optional emoji name per role of the reaction table, its default as the example. */
const reactionNamesShape = Object.fromEntries(
  REACTION_ROLE_NAMES.map((role) => [role, text(`"${REACTION_ROLES[role].emoji}"`).optional()]),
) as Record<ReactionRoleName, z.ZodOptional<ReturnType<typeof text>>>;

const toolDefinition = z.custom<NonNullable<ThreadlineConfig["tools"]>[number]>(isToolDefinition, {
  error: "must be a tool made with defineTool({ name, description, parameters, execute })",
});

const mcpServer = z
  .strictObject({
    command: text('"npx"').optional(),
    args: textList('["-y", "@modelcontextprotocol/server-github"]').optional(),
    env: textRecord("{ GITHUB_TOKEN: process.env.GITHUB_TOKEN }").optional(),
    cwd: text('"/srv/tools"').optional(),
    url: z
      .string({ error: "must be a URL, for example https://mcp.example.com/mcp" })
      .refine((value) => URL.canParse(value) && /^https?:/.test(value), {
        error: "must be an http(s) URL, for example https://mcp.example.com/mcp",
      })
      .optional(),
    headers: textRecord('{ Authorization: "Bearer …" }').optional(),
    approval: approvalNeedSchema.optional(),
    toolApproval: z.record(z.string(), approvalNeedSchema).optional(),
    interruptible: textList('["wait_for_build"]').optional(),
    enabled: bool().optional(),
    startupTimeoutMs: wholeNumber("30000").optional(),
    callTimeoutMs: wholeNumber("120000").optional(),
    reconnect: z
      .strictObject({
        initialDelayMs: wholeNumber("1000").optional(),
        maxDelayMs: wholeNumber("60000").optional(),
      })
      .optional(),
  })
  .superRefine((server, ctx) => {
    if ((server.command === undefined) === (server.url === undefined))
      ctx.addIssue({
        code: "custom",
        message:
          'needs either command (a server started over stdio, e.g. command: "npx") or url (streamable HTTP, e.g. url: "https://mcp.example.com/mcp"), not both',
      });
  });

const optionsOrFlag = <T extends z.ZodType>(options: T) =>
  z.union([bool(), options], { error: "must be true, false or an object of settings" });

/** Validates a config module's export; messages say what is expected, with an example. */
export const configSchema = z.strictObject({
  systemPrompt: z
    .union([z.string(), fn("")], { error: 'must be text or a function ({ thread, requester }) => "…"' })
    .optional(),
  model: z
    .strictObject({
      id: text('"gpt-4o-mini"').optional(),
      contextWindow: wholeNumber("128000").optional(),
      maxOutputTokens: wholeNumber("4096").optional(),
      headerTimeoutMs: wholeNumber("120000").optional(),
      idleTimeoutMs: z.number().int().min(0, { error: "must be 0 (off) or more" }).optional(),
      maxOutputChars: wholeNumber("200000").optional(),
      thinkTags: oneOf(["thinking", "text"]).optional(),
      temperature: number("0.2").min(0, { error: "must be 0 or more" }).optional(),
      reasoning: oneOf(["minimal", "low", "medium", "high", "xhigh", "max"]).optional(),
      prices: z
        .strictObject({
          input: number("0.15").optional(),
          output: number("0.6").optional(),
          cacheRead: number("0.075").optional(),
        })
        .optional(),
      headers: textRecord('{ "x-team": "ops" }').optional(),
    })
    .optional(),
  tools: z.array(toolDefinition, { error: "must be a list of tools made with defineTool(…)" }).optional(),
  builtinTools: z
    .strictObject({
      fetchUrl: optionsOrFlag(
        z.strictObject({
          allowHosts: textList('["wiki.internal"]').optional(),
          maxBytes: wholeNumber("2097152").optional(),
          maxChars: wholeNumber("40000").optional(),
          timeoutMs: wholeNumber("20000").optional(),
          maxRedirects: z.number().int().min(0).optional(),
          userAgent: text('"MyBot/1.0"').optional(),
          approval: approvalPolicySchema.optional(),
        }),
      ).optional(),
      files: optionsOrFlag(
        z.strictObject({
          maxReadBytes: wholeNumber("1048576").optional(),
          maxOutputChars: wholeNumber("50000").optional(),
          maxEntries: wholeNumber("500").optional(),
        }),
      ).optional(),
      shell: optionsOrFlag(
        z.strictObject({
          timeoutMs: wholeNumber("60000").optional(),
          maxTimeoutMs: wholeNumber("600000").optional(),
          maxOutputBytes: wholeNumber("65536").optional(),
          passEnv: textList('["HTTPS_PROXY"]').optional(),
          env: textRecord('{ CI: "1" }').optional(),
          shell: text('"/bin/bash"').optional(),
          killGraceMs: wholeNumber("2000").optional(),
          sandbox: z.enum(["bwrap", "none"], { error: 'must be "bwrap" or "none"' }).optional(),
          bwrapPath: text('"/usr/bin/bwrap"').optional(),
          network: z.boolean({ error: "must be true or false" }).optional(),
          readOnlyPaths: textList('["/opt/toolchain"]').optional(),
          approval: approvalPolicySchema.optional(),
          interruptible: z.boolean({ error: "must be true or false" }).optional(),
        }),
      ).optional(),
    })
    .optional(),
  mcpServers: z
    .record(
      z.string().regex(/^[A-Za-z0-9_-]{1,30}$/, {
        error: 'names must be 1–30 letters, digits, "_" or "-", for example github',
      }),
      mcpServer,
      {
        error: (issue) =>
          issue.code === "invalid_key"
            ? 'is not a valid server name: use 1–30 letters, digits, "_" or "-", for example github'
            : 'must be an object of servers, for example { github: { command: "npx", args: […] } }',
      },
    )
    .optional(),
  approvals: z
    .record(z.string().regex(TOOL_NAME_PATTERN, { error: "must be a tool name" }), approvalPolicySchema, {
      error: 'must be an object of tool names to policies, for example { shell: "ask", fetch_url: "never" }',
    })
    .optional(),
  approvers: textList('["U012ABCDEF"]').optional(),
  approvalTimeoutMs: wholeNumber("600000").optional(),
  approvalReminderMs: offOrCount("120000").optional(),
  allow: z
    .strictObject({
      users: textList('["U012ABCDEF"]').optional(),
      channels: textList('["C012ABCDEF"]').optional(),
    })
    .optional(),
  reactions: z.strictObject(reactionNamesShape).optional(),
  defaultDisposition: oneOf(["steer", "followUp"]).optional(),
  interruptPrefix: z.string({ error: 'must be text, for example "!!" (or "" to turn it off)' }).optional(),
  steeringMode: queueMode.optional(),
  followUpMode: queueMode.optional(),
  requireMentionWhenIdle: bool().optional(),
  stopWords: z
    .array(z.string().trim().min(1, "a stop word must not be empty"), {
      error: 'must be a list of words, for example ["stop", "halt"]',
    })
    .min(1, 'must name at least one word, for example ["stop"]')
    .optional(),
  queueCap: wholeNumber("20").optional(),
  budgets: z
    .strictObject({
      maxTurns: wholeNumber("50").optional(),
      maxWallMs: wholeNumber("900000").optional(),
      maxTokens: wholeNumber("200000").optional(),
    })
    .optional(),
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
  spendCaps: z
    .strictObject({
      thread: spendCap.optional(),
      user: spendCap.optional(),
      channel: spendCap.optional(),
      workspace: spendCap.optional(),
    })
    .optional(),
  loopGuard: z
    .strictObject({
      maxRepeats: offOrCount("3").optional(),
      maxToolCallsPerTurn: offOrCount("20").optional(),
      maxToolCallsPerRun: offOrCount("100").optional(),
    })
    .optional(),
  footer: bool().optional(),
  toolResultMaxChars: wholeNumber("32000")
    .min(1_000, { error: "must be at least 1000, for example 32000" })
    .optional(),
  replyMaxMessages: wholeNumber("20").min(2, { error: "must be at least 2, for example 20" }).optional(),
  replyMaxChars: wholeNumber("40000").optional(),
  workspaceDir: text('"/var/lib/threadline/workspaces"').optional(),
  context: z.strictObject({ summarize: bool().optional() }).optional(),
  slack: z
    .strictObject({
      // "Use this method to set up to four suggested prompts" (https://docs.slack.dev/reference/methods/assistant.threads.setSuggestedPrompts).
      suggestedPrompts: z
        .array(
          z.strictObject({
            title: text('"What can you do?"'),
            message: text('"What can you help me with?"'),
          }),
          {
            error:
              'must be a list like [{ title: "What can you do?", message: "What can you help me with?" }]',
          },
        )
        .max(4, { error: "Slack shows at most 4 suggested prompts" })
        .optional(),
      suggestedPromptsTitle: text('"Try asking"').optional(),
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
