import type { StreamFn } from "../agent/index.js";
import type { Env } from "../config/index.js";
import { failedStreamFn } from "../llm/index.js";

/**
 * What to set when no model is configured (neither `OPENAI_API_KEY` nor `OPENAI_BASE_URL`), in one
 * sentence for the log, the playground banner and the chat; `undefined` when a model is configured.
 */
export function missingModelHint(env: Pick<Env, "OPENAI_API_KEY" | "OPENAI_BASE_URL">): string | undefined {
  if (env.OPENAI_API_KEY || env.OPENAI_BASE_URL) return undefined;
  return (
    "No model is configured. Set OPENAI_API_KEY, or OPENAI_BASE_URL for a local server such as Ollama " +
    "(OPENAI_BASE_URL=http://localhost:11434/v1 and OPENAI_MODEL=llama3.1), then restart Threadline."
  );
}

/**
 * A stream function for a bot without a model: every request ends at once with an error message saying
 * `hint`, so runs finish with that sentence in the chat instead of a connection error. Never throws.
 */
export function unconfiguredModelStreamFn(hint: string): StreamFn {
  return failedStreamFn(hint);
}
