import { z } from "zod";
import {
  contextWindowSetting,
  msOrOffSetting,
  optionalText,
  positiveIntSetting,
  urlSetting,
} from "../env-settings.js";
import { defineProvider, type ProviderEnvSettings } from "../provider-module.js";
import { describeOpenAIFailure } from "./errors.js";
import { DEFAULT_OPENAI_BASE_URL, OPENAI_COMPLETIONS_API, openAIModel } from "./model.js";
import { OPENAI_PRICES } from "./prices.js";
import { probeModelEndpoint, serverContextWindow } from "./probe.js";
import { createOpenAIStreamFn } from "./stream.js";

/** The OpenAI-compatible provider's environment variables (documented in `.env.example`). */
const OPENAI_ENV = {
  OPENAI_API_KEY: optionalText,
  OPENAI_BASE_URL: urlSetting("http://localhost:11434/v1"),
  OPENAI_MODEL: z.string().trim().min(1).default("gpt-4o-mini"),
  /** Time allowed until the model server's response headers arrive, per attempt (ms). */
  OPENAI_HEADER_TIMEOUT_MS: positiveIntSetting(120_000, "120000"),
  /** Abandon a started answer when the server sends no bytes for this long (ms); 0 turns it off. */
  OPENAI_IDLE_TIMEOUT_MS: msOrOffSetting(120_000, "120000"),
  /** Cut an answer at this many characters (text, thinking and tool arguments together). */
  OPENAI_MAX_OUTPUT_CHARS: positiveIntSetting(200_000, "200000"),
  /** `<think>…</think>` at the start of an answer: `thinking` (default) or `text` (keep it in the answer). */
  OPENAI_THINK_TAGS: z
    .enum(["thinking", "text"], { message: "must be thinking or text, for example thinking" })
    .default("thinking"),
  /** The model's input window in tokens; unset = the server's, else known per model. */
  OPENAI_CONTEXT_WINDOW: contextWindowSetting,
};

/**
 * The OpenAI-compatible chat-completions provider (the `openai` SDK): `THREADLINE_MODEL_PROVIDER=openai`, the
 * default, registered for `api: "openai-completions"` ({@link OPENAI_COMPLETIONS_API}). Its `streamFn`
 * takes {@link OpenAIProviderOptions} (a superset of the shared settings); its variables are `OPENAI_*`.
 */
export const openAIProvider = defineProvider({
  name: "openai",
  api: OPENAI_COMPLETIONS_API,
  streamFn: (options) => createOpenAIStreamFn(options),
  describeError: describeOpenAIFailure,
  probe: probeModelEndpoint,
  serverContextWindow,
  defaultBaseURL: DEFAULT_OPENAI_BASE_URL,
  env: OPENAI_ENV,
  fromEnv(env) {
    const settings: ProviderEnvSettings = {
      model: env.OPENAI_MODEL,
      headerTimeoutMs: env.OPENAI_HEADER_TIMEOUT_MS,
      idleTimeoutMs: env.OPENAI_IDLE_TIMEOUT_MS,
      maxOutputChars: env.OPENAI_MAX_OUTPUT_CHARS,
      thinkTags: env.OPENAI_THINK_TAGS,
    };
    if (env.OPENAI_API_KEY !== undefined) settings.apiKey = env.OPENAI_API_KEY;
    if (env.OPENAI_BASE_URL !== undefined) settings.baseURL = env.OPENAI_BASE_URL;
    if (env.OPENAI_CONTEXT_WINDOW !== undefined) settings.contextWindow = env.OPENAI_CONTEXT_WINDOW;
    return settings;
  },
  variables: {
    apiKey: "OPENAI_API_KEY",
    baseURL: "OPENAI_BASE_URL",
    model: "OPENAI_MODEL",
    contextWindow: "OPENAI_CONTEXT_WINDOW",
  },
  setupHint:
    "Set OPENAI_API_KEY, or OPENAI_BASE_URL for a local server such as Ollama " +
    "(OPENAI_BASE_URL=http://localhost:11434/v1 and OPENAI_MODEL=llama3.1)",
  model: openAIModel,
  prices: OPENAI_PRICES,
});
