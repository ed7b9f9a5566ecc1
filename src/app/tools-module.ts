import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { RunTool } from "../runs/index.js";

/**
 * Loads the tools of `THREADLINE_TOOLS_MODULE`: an ES module (path relative to the working directory)
 * whose `tools` or default export is an array of tools, or a function returning one (sync or async).
 * @throws Error naming the module when it cannot be imported or exports no tools.
 */
export async function loadToolsModule(path: string): Promise<RunTool[]> {
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
  return tools as RunTool[];
}
