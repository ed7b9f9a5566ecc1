import type { Env } from "../config/index.js";
import { createConvertToLlm, createOpenAIStreamFn, openAIModel } from "../llm/index.js";
import type { AgentSetup, RunTool } from "../runs/index.js";

export const DEFAULT_SYSTEM_PROMPT = [
  "You are Threadline, an assistant that works inside a chat thread (Slack or Discord).",
  "Several people may write in the thread; each user message starts with its author's name.",
  "Answer concisely in Markdown. Use the tools you have when they help; say what you did.",
].join(" ");

/** The agent every run gets: the configured OpenAI-compatible model, the system prompt, the tools. */
export function agentSetupFromEnv(env: Env, tools: RunTool[] = []): AgentSetup {
  const options: Parameters<typeof createOpenAIStreamFn>[0] = {};
  if (env.OPENAI_API_KEY) options.apiKey = env.OPENAI_API_KEY;
  if (env.OPENAI_BASE_URL) options.baseURL = env.OPENAI_BASE_URL;
  const modelOptions: Parameters<typeof openAIModel>[0] = { id: env.OPENAI_MODEL };
  if (env.OPENAI_BASE_URL) modelOptions.baseUrl = env.OPENAI_BASE_URL;
  return {
    model: openAIModel(modelOptions),
    streamFn: createOpenAIStreamFn(options),
    convertToLlm: createConvertToLlm(),
    systemPrompt: DEFAULT_SYSTEM_PROMPT,
    tools,
  };
}
