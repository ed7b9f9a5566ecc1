/**
 * Context policy: keeps every model request of a run inside the model's context window (summaries,
 * shortened tool results, left-out turns), as the loop's `transformContext`. Built on the token counter
 * and the summary messages of `src/llm`. This is the package's `threadline/context` surface.
 */

export { createContextManager } from "./manager.js";
export type { ContextEvent, ContextManagerOptions, ContextRun, ContextTransform } from "./types.js";
