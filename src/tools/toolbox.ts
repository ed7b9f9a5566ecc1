import type { ApprovalPolicy } from "./approval-policy.js";
import type { AnyToolDefinition, BoundTool, ToolRunScope } from "./define-tool.js";
import { type FetchUrlOptions, fetchUrlTool } from "./fetch-url.js";
import { type FileToolsOptions, fileTools } from "./file-tools.js";
import { type ShellOptions, shellTool } from "./shell.js";

/** Which built-in tools are on. `false` disables one; an object enables it with settings. */
export interface BuiltinToolsOptions {
  /** `fetch_url`. Default on. */
  fetchUrl?: boolean | FetchUrlOptions;
  /** `read_file`, `write_file`, `list_files`, `edit_file` in the thread workspace. Default on. */
  files?: boolean | FileToolsOptions;
  /** `shell` in the thread workspace (approval "ask"). Default **off**. */
  shell?: boolean | ShellOptions;
}

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
