/**
 * A stand-in worker process for the shell tests: runs one `shell` tool call with the options given as
 * JSON in argv[2] and prints `{ text }` or `{ error }`. Started with secrets in its environment, so a
 * command that could read its parent's `/proc/<pid>/environ` would find them.
 */
import { type ShellOptions, shellTool } from "../../src/tools/index.js";
import { call, textOf } from "./helpers.js";

const { command, workspace, options } = JSON.parse(process.argv[2] ?? "{}") as {
  command: string;
  workspace: string;
  options?: ShellOptions;
};
try {
  const result = await call(shellTool(options), { command }, { workspaceDir: workspace });
  process.stdout.write(JSON.stringify({ text: textOf(result) }));
} catch (err) {
  process.stdout.write(JSON.stringify({ error: err instanceof Error ? err.message : String(err) }));
}
