import { z } from "zod";
import type {
  AgentToolResult,
  AgentToolUpdateCallback,
  AnyAgentTool,
  ImageContent,
  TextContent,
  ToolExecutionMode,
} from "../agent/index.js";
import {
  type ApprovalPolicy,
  type ApprovalTimeout,
  approvalPolicySchema,
  approvalTimeoutSchema,
  type BoundApprovalPolicy,
  bindApprovalPolicy,
  type ToolApprovalContext,
  type ToolThread,
  type ToolUser,
} from "./approval-policy.js";

/**
 * What a run hands its tools when it builds them (the runs side's `ToolRunContext` plus the thread's
 * workspace directory). Tools are bound once per run with {@link ToolDefinition.forRun}.
 */
export interface ToolRunScope {
  /** Stable id of the thread (`platform:workspace:channel:thread`). */
  threadId: string;
  thread: ToolThread;
  runId: string;
  /** The user whose message started the run. */
  requester: ToolUser;
  /** The thread's own directory for files; tools create it on first use. */
  workspaceDir: string;
}

/** What `execute` gets besides its arguments. */
export interface ToolContext extends ToolApprovalContext {
  toolCallId: string;
  /** Aborted when the run stops (🛑, `stop`, budget, shutdown). Long work should watch it. */
  signal: AbortSignal;
  /** Reports progress; each call becomes a `tool_execution_update` event. Never throws. */
  onUpdate(progress: string | AgentToolResult): void;
}

/** What `execute` may return: text, a full result, or any JSON value (sent to the model as JSON). */
export type ToolOutput =
  | string
  | AgentToolResult
  | Record<string, unknown>
  | unknown[]
  | number
  | boolean
  | null;

/** The argument of {@link defineTool}. */
export interface ToolSpec<TParams extends z.ZodObject> {
  /** What the model calls: letters, digits, `_` and `-`, at most 64 characters. */
  name: string;
  /** Tells the model what the tool does and when to use it. */
  description: string;
  /** The arguments, as a zod object; the model sees its JSON Schema, calls are validated against it. */
  parameters: TParams;
  /** Default `"never"`. `"ask"` posts Approve/Deny buttons in the thread before the call runs. */
  approval?: ApprovalPolicy<z.output<TParams>>;
  /** `"sequential"` makes every batch this tool appears in run one call at a time. Default parallel. */
  executionMode?: ToolExecutionMode;
  /**
   * `true` lets a steer or interrupt that arrives while the tool runs abort it (`ctx.signal` aborts; the
   * model reads "Interrupted by a new message from <name>"). For waits and reads only; default `false`, so
   * side-effecting tools are never stopped half-way.
   */
  interruptible?: boolean;
  /**
   * How long an approval card of this tool waits for a decision before the call is denied ("approval timed
   * out"): milliseconds, or `"none"` to wait until someone decides (or the run is stopped). Default: the
   * runs config's `approvalTimeoutMs` (10 minutes). Only used when the policy asks.
   */
  approvalTimeoutMs?: ApprovalTimeout;
  /** Human-readable name for progress lines. Default: `name`. */
  label?: string;
  /** Does the work. Throw (ideally a {@link ToolError}) to report failure; the model reads the message. */
  execute(args: z.output<TParams>, ctx: ToolContext): Promise<ToolOutput> | ToolOutput;
}

/**
 * A tool bound to one run: an `AgentTool` plus its approval policy with the run's context applied (the runs
 * side's `RunTool`; absent policy = `"never"`).
 */
export type BoundTool = AnyAgentTool & {
  approval?: BoundApprovalPolicy;
  /** See {@link ToolSpec.approvalTimeoutMs}; absent = the runs config's default. */
  approvalTimeoutMs?: ApprovalTimeout;
};

/**
 * A tool written as a plain agent tool (`execute(toolCallId, params, signal, onUpdate)`) with an optional
 * approval policy — what a `THREADLINE_TOOLS_MODULE` may export besides `defineTool` definitions.
 * {@link toToolDefinition} checks it as `defineTool` checks a spec.
 */
export type AgentToolSpec = AnyAgentTool & { approval?: ApprovalPolicy; approvalTimeoutMs?: ApprovalTimeout };

/** What {@link defineTool} returns: a validated tool that is bound to each run with `forRun`. */
export interface ToolDefinition<TParams extends z.ZodObject = z.ZodObject> {
  readonly kind: "threadline-tool";
  readonly name: string;
  readonly description: string;
  readonly parameters: TParams;
  readonly approval: ApprovalPolicy<z.output<TParams>>;
  readonly executionMode: ToolExecutionMode | undefined;
  /** Whether a steer or interrupt may abort a running call (see {@link ToolSpec.interruptible}). */
  readonly interruptible: boolean;
  /** Binds the tool to a run's thread, requester and workspace. Cheap; called once per run. */
  forRun(scope: ToolRunScope): BoundTool;
  /** A copy with another approval policy (config overrides use this). */
  withApproval(approval: ApprovalPolicy<z.output<TParams>>): ToolDefinition<TParams>;
}

/** A definition with any parameters; what lists of tools are typed as. */
// biome-ignore lint/suspicious/noExplicitAny: variance escape hatch for heterogeneous tool lists.
export type AnyToolDefinition = ToolDefinition<any>;

/** A failure whose message is shown to the model as is (no "failed:" prefix). */
export class ToolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ToolError";
  }
}

/** Thrown by {@link defineTool} for a malformed definition; `problems` lists each one in plain words. */
export class ToolDefinitionError extends Error {
  constructor(
    readonly toolName: string,
    readonly problems: string[],
  ) {
    super(`Tool "${toolName}" is not valid: ${problems.join("; ")}`);
    this.name = "ToolDefinitionError";
  }
}

/** Names OpenAI-compatible APIs accept for functions. */
export const TOOL_NAME_PATTERN = /^[a-zA-Z0-9_-]{1,64}$/;

/** The problems of a tool spec, in plain words; empty when it is valid. */
export function toolSpecProblems(spec: Partial<Record<keyof ToolSpec<z.ZodObject>, unknown>>): string[] {
  const problems: string[] = [];
  if (typeof spec.name !== "string" || !TOOL_NAME_PATTERN.test(spec.name))
    problems.push(
      'name must be 1–64 letters, digits, "_" or "-", for example "get_weather" (the model calls the tool by it)',
    );
  if (typeof spec.description !== "string" || spec.description.trim() === "")
    problems.push(
      'description must be a sentence telling the model what the tool does, for example "Looks up…"',
    );
  if (!(spec.parameters instanceof z.ZodObject) && !looksLikeZodObject(spec.parameters))
    problems.push("parameters must be a zod object, for example z.object({ city: z.string() })");
  if (spec.approval !== undefined && !approvalPolicySchema.safeParse(spec.approval).success)
    problems.push('approval must be "never", "ask" or a function (args, ctx) => "never" | "ask"');
  if (
    spec.executionMode !== undefined &&
    spec.executionMode !== "parallel" &&
    spec.executionMode !== "sequential"
  )
    problems.push('executionMode must be "parallel" or "sequential"');
  if (spec.interruptible !== undefined && typeof spec.interruptible !== "boolean")
    problems.push("interruptible must be true or false");
  if (
    spec.approvalTimeoutMs !== undefined &&
    !approvalTimeoutSchema.safeParse(spec.approvalTimeoutMs).success
  )
    problems.push('approvalTimeoutMs must be a positive number of milliseconds or "none"');
  if (typeof spec.execute !== "function") problems.push("execute must be a function (args, ctx) => result");
  return problems;
}

/** A zod object from another copy of zod (e.g. a config module loaded through tsx) is accepted too. */
function looksLikeZodObject(value: unknown): boolean {
  const def = (value as { _zod?: { def?: { type?: unknown } } } | undefined)?._zod?.def;
  return def?.type === "object" && typeof (value as { safeParse?: unknown }).safeParse === "function";
}

/**
 * Defines a tool for Threadline's agents. The definition is checked at once.
 *
 * @throws ToolDefinitionError listing every problem (bad name, missing description, non-object schema…).
 * @example
 * defineTool({
 *   name: "get_weather",
 *   description: "Current weather for a city.",
 *   parameters: z.object({ city: z.string() }),
 *   approval: "never",
 *   async execute({ city }, ctx) { ctx.onUpdate(`looking up ${city}…`); return { city, tempC: 21 }; },
 * });
 */
export function defineTool<TParams extends z.ZodObject>(spec: ToolSpec<TParams>): ToolDefinition<TParams> {
  const problems = toolSpecProblems(spec);
  if (problems.length > 0) throw new ToolDefinitionError(String(spec.name ?? "(unnamed)"), problems);
  return makeDefinition(spec, (approval, scope) => bindSpec(spec, approval, scope));
}

/**
 * The one way a tool from any source becomes a definition: a `defineTool` definition is returned as is; a
 * plain agent tool ({@link AgentToolSpec}, as a tools module may export) is checked like a `defineTool`
 * spec and wrapped, its `execute` and policy kept (a policy function gets the run's
 * {@link ToolApprovalContext}).
 * @throws ToolDefinitionError naming the tool (or its position, `where`) and every problem.
 */
export function toToolDefinition(value: unknown, where = "tool"): AnyToolDefinition {
  if (isToolDefinition(value)) return value;
  if (value === null || typeof value !== "object" || Array.isArray(value))
    throw new ToolDefinitionError(where, [
      "must be a tool made with defineTool({ name, description, parameters, execute }), or an agent tool { name, description, parameters, execute(toolCallId, params, signal, onUpdate) }",
    ]);
  const tool = value as AgentToolSpec;
  const problems = toolSpecProblems(tool);
  if (problems.length > 0)
    throw new ToolDefinitionError(typeof tool.name === "string" && tool.name ? tool.name : where, problems);
  return makeDefinition<z.ZodObject>(
    { ...tool, parameters: tool.parameters as z.ZodObject },
    (approval, scope) => {
      const bound: BoundTool = { ...tool, approval: bindApprovalPolicy(approval, approvalContextOf(scope)) };
      return bound;
    },
  );
}

/** Whether `value` is what {@link defineTool} returns (from any copy of this module). */
export function isToolDefinition(value: unknown): value is AnyToolDefinition {
  return (
    typeof value === "object" &&
    value !== null &&
    (value as { kind?: unknown }).kind === "threadline-tool" &&
    typeof (value as { forRun?: unknown }).forRun === "function"
  );
}

/** The fields every definition carries, whatever it was made from. */
type DefinitionFields<TParams extends z.ZodObject> = Pick<
  ToolSpec<TParams>,
  "name" | "description" | "parameters" | "approval" | "executionMode" | "interruptible"
>;

function makeDefinition<TParams extends z.ZodObject>(
  fields: DefinitionFields<TParams>,
  bind: (approval: ApprovalPolicy<z.output<TParams>>, scope: ToolRunScope) => BoundTool,
): ToolDefinition<TParams> {
  const approval = fields.approval ?? "never";
  return {
    kind: "threadline-tool",
    name: fields.name,
    description: fields.description,
    parameters: fields.parameters,
    approval,
    executionMode: fields.executionMode,
    interruptible: fields.interruptible === true,
    forRun: (scope) => bind(approval, scope),
    withApproval: (next) => makeDefinition({ ...fields, approval: next }, bind),
  };
}

function approvalContextOf(scope: ToolRunScope): ToolApprovalContext {
  return {
    threadId: scope.threadId,
    thread: scope.thread,
    runId: scope.runId,
    requester: scope.requester,
    user: scope.requester,
    workspaceDir: scope.workspaceDir,
  };
}

function bindSpec<TParams extends z.ZodObject>(
  spec: ToolSpec<TParams>,
  approval: ApprovalPolicy<z.output<TParams>>,
  scope: ToolRunScope,
): BoundTool {
  const approvalContext = approvalContextOf(scope);
  const tool: BoundTool = {
    name: spec.name,
    label: spec.label ?? spec.name,
    description: spec.description,
    parameters: spec.parameters,
    approval: bindApprovalPolicy(approval, approvalContext),
    execute: async (toolCallId, params, signal, onUpdate) => {
      const ctx: ToolContext = {
        ...approvalContext,
        toolCallId,
        signal: signal ?? new AbortController().signal,
        onUpdate: (progress) => reportProgress(onUpdate, progress),
      };
      try {
        return toResult(await spec.execute(params as z.output<TParams>, ctx));
      } catch (err) {
        throw new Error(describeToolFailure(spec.name, err, ctx.signal));
      }
    },
  };
  if (spec.executionMode) tool.executionMode = spec.executionMode;
  if (spec.interruptible) tool.interruptible = true;
  if (spec.approvalTimeoutMs !== undefined) tool.approvalTimeoutMs = spec.approvalTimeoutMs;
  return tool;
}

function reportProgress(onUpdate: AgentToolUpdateCallback | undefined, progress: string | AgentToolResult) {
  try {
    onUpdate?.(typeof progress === "string" ? textResult(progress) : progress);
  } catch {
    // Progress is best effort; a failing listener must not fail the tool.
  }
}

/** A result with one text block. */
export function textResult(text: string, details: unknown = {}): AgentToolResult {
  return { content: [{ type: "text", text }], details };
}

function isToolResult(value: unknown): value is AgentToolResult {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return false;
  const content = (value as { content?: unknown }).content;
  return (
    Array.isArray(content) &&
    content.every(
      (block: TextContent | ImageContent) =>
        block !== null && typeof block === "object" && (block.type === "text" || block.type === "image"),
    )
  );
}

/** Normalizes what `execute` returned into an `AgentToolResult`. */
export function toResult(output: ToolOutput | undefined): AgentToolResult {
  if (typeof output === "string") return textResult(output);
  if (isToolResult(output)) return { ...output, details: output.details ?? {} };
  if (output === undefined) return textResult("(done, no output)");
  return textResult(JSON.stringify(output, null, 2) ?? String(output), output);
}

/**
 * The text the model reads when a tool fails: a {@link ToolError}'s message as is; an abort as "stopped";
 * anything else as `<tool> failed: <message>` (no stack trace).
 */
export function describeToolFailure(toolName: string, err: unknown, signal?: AbortSignal): string {
  if (err instanceof ToolError || (err instanceof Error && err.name === "ToolError")) return err.message;
  if (signal?.aborted) return `${toolName} was stopped before it finished (the run was stopped).`;
  const message = err instanceof Error ? err.message : String(err);
  return `${toolName} failed: ${message || "unknown error"}`;
}
