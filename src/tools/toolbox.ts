import { z } from "zod";
import type { ApprovalPolicy } from "./approval-policy.js";
import type { AnyToolDefinition, BoundTool, ToolRunScope } from "./define-tool.js";
import { fetchUrlSettingsSchema, fetchUrlTool } from "./fetch-url.js";
import { fileTools, fileToolsSettingsSchema } from "./file-tools.js";
import { flagSetting } from "./setting-schemas.js";
import { shellSettingsSchema, shellTool } from "./shell.js";

const onOffOr = <T extends z.ZodType>(settings: T) =>
  z.union([flagSetting(), settings], { error: "must be true, false or an object of settings" });

/**
 * Which built-in tools are on (`builtinTools` in the config module). `false` disables one; `true` enables
 * it with its defaults; an object enables it with settings (each tool's settings schema).
 */
export const builtinToolsSchema = z.strictObject({
  /** `fetch_url`. Default on. */
  fetchUrl: onOffOr(fetchUrlSettingsSchema).optional(),
  /** `read_file`, `write_file`, `list_files`, `edit_file` in the thread workspace. Default on. */
  files: onOffOr(fileToolsSettingsSchema).optional(),
  /** `shell` in the thread workspace (approval "ask"). Default **off**. */
  shell: onOffOr(shellSettingsSchema).optional(),
});

/** See {@link builtinToolsSchema}. */
export type BuiltinToolsOptions = z.infer<typeof builtinToolsSchema>;

function settings<T extends object>(
  value: boolean | T | undefined,
  enabledByDefault: boolean,
): T | undefined {
  if (value === undefined) return enabledByDefault ? ({} as T) : undefined;
  if (value === false) return undefined;
  return value === true ? ({} as T) : value;
}

/** The enabled built-in tools, in a stable order. */
export function builtinTools(options: BuiltinToolsOptions = {}): AnyToolDefinition[] {
  const tools: AnyToolDefinition[] = [];
  const fetch = settings(options.fetchUrl, true);
  if (fetch) tools.push(fetchUrlTool(fetch));
  const files = settings(options.files, true);
  if (files) tools.push(...fileTools(files));
  const shell = settings(options.shell, false);
  if (shell) tools.push(shellTool(shell));
  return tools;
}

/** Replaces the approval policy of the tools named in `policies` (by the name the model sees). */
export function withApprovalPolicies(
  tools: readonly AnyToolDefinition[],
  policies: Readonly<Record<string, ApprovalPolicy>>,
): AnyToolDefinition[] {
  return tools.map((tool) => {
    const policy = policies[tool.name];
    return policy === undefined ? tool : tool.withApproval(policy);
  });
}

/** Names that more than one tool uses (the model could not tell them apart). */
export function duplicateToolNames(tools: readonly AnyToolDefinition[]): string[] {
  const seen = new Set<string>();
  const duplicates = new Set<string>();
  for (const tool of tools) {
    if (seen.has(tool.name)) duplicates.add(tool.name);
    seen.add(tool.name);
  }
  return [...duplicates];
}

/** Binds every definition to one run (what a per-run tools factory returns). */
export function bindTools(tools: readonly AnyToolDefinition[], scope: ToolRunScope): BoundTool[] {
  return tools.map((tool) => tool.forRun(scope));
}
