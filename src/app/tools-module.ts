import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import {
  type AnyToolDefinition,
  duplicateToolNames,
  ToolDefinitionError,
  toToolDefinition,
} from "../tools/index.js";

/**
 * Loads the tools of `THREADLINE_TOOLS_MODULE`: an ES module (path relative to the working directory)
 * whose `tools` or default export is an array of tools, or a function returning one (sync or async). Each
 * entry is a `defineTool` definition or a plain agent tool (`execute(toolCallId, params, signal, onUpdate)`,
 * optional `approval`), checked as `defineTool` checks a spec.
 * @throws Error naming the module when it cannot be imported, exports no tools, or exports a malformed tool
 * (naming the tool and every problem) or two tools of one name.
 */
export async function loadToolsModule(path: string): Promise<AnyToolDefinition[]> {
  let module: Record<string, unknown>;
  try {
    module = (await import(pathToFileURL(resolve(path)).href)) as Record<string, unknown>;
  } catch (err) {
    throw new Error(`THREADLINE_TOOLS_MODULE "${path}" could not be loaded: ${(err as Error).message}`, {
      cause: err,
    });
  }
  const exported = module.tools ?? module.default;
  const tools = typeof exported === "function" ? await (exported as () => unknown)() : exported;
  if (!Array.isArray(tools)) {
    throw new Error(
      `THREADLINE_TOOLS_MODULE "${path}" must export \`tools\` (or a default export): an array of tools`,
    );
  }
  const problems: string[] = [];
  const definitions: AnyToolDefinition[] = [];
  tools.forEach((tool: unknown, index) => {
    try {
      definitions.push(toToolDefinition(tool, `tools[${index}]`));
    } catch (err) {
      if (!(err instanceof ToolDefinitionError)) throw err;
      problems.push(`tool "${err.toolName}" (tools[${index}]): ${err.problems.join("; ")}`);
    }
  });
  for (const name of duplicateToolNames(definitions))
    problems.push(`more than one tool is named "${name}"; tool names must be unique`);
  if (problems.length > 0)
    throw new Error(
      `THREADLINE_TOOLS_MODULE "${path}" exports tools that are not valid: ${problems.join(". ")}`,
    );
  return definitions;
}
