import type { StreamFn } from "../agent/index.js";
import type { Env } from "../config/index.js";
import { failedStreamFn } from "../llm/index.js";
import { providerEnv } from "./agent-config.js";

/**
 * Whether the active provider has a model to talk to: its key or its endpoint is set (`OPENAI_API_KEY` or
 * `OPENAI_BASE_URL` for `openai`).
 */
export function modelConfigured(env: Env): boolean {
  const { settings } = providerEnv(env);
  return settings.apiKey !== undefined || settings.baseURL !== undefined;
}

/** The variables that configure a model, for a log field: `OPENAI_API_KEY or OPENAI_BASE_URL`. */
export function modelSettingNames(env: Env): string {
  const { variables } = providerEnv(env).module;
  return `${variables.apiKey} or ${variables.baseURL}`;
}

/** What to set for a model, one sentence without a final period (the active provider's `setupHint`). */
export function modelSetupHint(env: Env): string {
  return providerEnv(env).module.setupHint;
}

/**
 * What to set when no model is configured ({@link modelConfigured}), in one sentence for the log, the
 * playground banner and the chat; `undefined` when a model is configured.
 */
export function missingModelHint(env: Env): string | undefined {
  if (modelConfigured(env)) return undefined;
  return `No model is configured. ${modelSetupHint(env)}, then restart Threadline.`;
}

/**
 * A stream function for a bot without a model: every request ends at once with an error message saying
 * `hint`, so runs finish with that sentence in the chat instead of a connection error. Never throws.
 */
export function unconfiguredModelStreamFn(hint: string): StreamFn {
  return failedStreamFn(hint);
}
