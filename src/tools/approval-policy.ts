import { z } from "zod";

/** A chat thread as tools see it (structurally the chat layer's `ThreadRef`). */
export interface ToolThread {
  platform: string;
  workspace: string;
  channel: string;
  thread: string;
}

/** A chat user as tools see it. */
export interface ToolUser {
  id: string;
  name: string;
}

/** What an approval policy function sees: the run it is asked in. */
export interface ToolApprovalContext {
  threadId: string;
  thread: ToolThread;
  runId: string;
  /** The user whose message started the run. */
  requester: ToolUser;
  /** The same user as `requester` (the older name). */
  user: ToolUser;
  /** The thread's own directory for files. */
  workspaceDir: string;
}

/** The two answers a policy gives: run the call at once, or post Approve/Deny buttons first. */
export const approvalNeedSchema = z.enum(["never", "ask"], { error: 'must be "never" or "ask"' });

/** Whether a call needs a human decision first. */
export type ApprovalNeed = z.infer<typeof approvalNeedSchema>;

/** A policy decided per call from the validated arguments. May be async; a throw or rejection blocks the call. */
export type ApprovalFunction<TArgs = Record<string, unknown>> = (
  args: TArgs,
  ctx: ToolApprovalContext,
) => ApprovalNeed | Promise<ApprovalNeed>;

/**
 * The approval policy of a tool, wherever it is set (`defineTool`, a tools module, `approvals` in the config
 * module, the built-ins' options, MCP servers): a static answer or a function of the call. Default `"never"`
 * (MCP tools: `"ask"`).
 */
export const approvalPolicySchema: z.ZodType<ApprovalPolicy, ApprovalPolicy> = z.union(
  [
    approvalNeedSchema,
    z.custom<ApprovalFunction>((value) => typeof value === "function", { error: "must be a function" }),
  ],
  { error: 'must be "never", "ask" or a function (args, ctx) => "never" | "ask"' },
);

/** See {@link approvalPolicySchema}; `TArgs` types a function's arguments (what `defineTool` infers). */
export type ApprovalPolicy<TArgs = Record<string, unknown>> = ApprovalNeed | ApprovalFunction<TArgs>;

/**
 * {@link approvalPolicySchema} for a tool whose policy functions get `TArgs` (a built-in's `approval`
 * option): the same check, with the function's arguments typed as the tool's.
 */
export const approvalPolicySchemaFor = <TArgs>() =>
  approvalPolicySchema as unknown as z.ZodType<ApprovalPolicy<TArgs>, ApprovalPolicy<TArgs>>;

/**
 * How long an approval card waits for a decision before the call is denied ("approval timed out"):
 * milliseconds, or `"none"` to wait until someone decides (or the run is stopped).
 */
export const approvalTimeoutSchema = z.union([z.literal("none"), z.number().finite().positive()], {
  error: 'must be a positive number of milliseconds or "none"',
});

/** See {@link approvalTimeoutSchema}. */
export type ApprovalTimeout = z.infer<typeof approvalTimeoutSchema>;

/** A policy bound to one run (its context applied): what the runs layer evaluates per call. */
export type BoundApprovalPolicy = ApprovalNeed | ((args: Record<string, unknown>) => Promise<ApprovalNeed>);

/** Binds `policy` to the run `ctx` describes. */
export function bindApprovalPolicy<TArgs>(
  policy: ApprovalPolicy<TArgs>,
  ctx: ToolApprovalContext,
): BoundApprovalPolicy {
  return typeof policy === "function" ? async (args) => policy(args as TArgs, ctx) : policy;
}
