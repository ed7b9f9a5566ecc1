import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AgentToolResult } from "../../src/agent/index.js";
import type { AnyToolDefinition, ToolRunScope } from "../../src/tools/index.js";

/** A run scope whose workspace is `workspaceDir`. */
export function scope(workspaceDir: string): ToolRunScope {
  return {
    threadId: "slack:T1:C1:1700000000.000100",
    thread: { platform: "slack", workspace: "T1", channel: "C1", thread: "1700000000.000100" },
    runId: "run-1",
    requester: { id: "U_ALICE", name: "Alice" },
    workspaceDir,
  };
}

/** Binds and executes a tool as the agent loop would; rejects with the text the model would read. */
export async function call(
  tool: AnyToolDefinition,
  args: Record<string, unknown>,
  options: { workspaceDir?: string; signal?: AbortSignal; updates?: AgentToolResult[] } = {},
): Promise<AgentToolResult> {
  const bound = tool.forRun(scope(options.workspaceDir ?? join(tmpdir(), "threadline-unused")));
  const parsed = bound.parameters.parse(args) as Record<string, unknown>;
  return bound.execute("call-1", parsed, options.signal, (update) => options.updates?.push(update));
}

/** The text blocks of a result, joined. */
export function textOf(result: AgentToolResult): string {
  return result.content.map((block) => (block.type === "text" ? block.text : "")).join("\n");
}

/** A fresh temporary directory, removed by the returned cleanup. */
export async function tempDir(name: string): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), `threadline-${name}-`));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}
