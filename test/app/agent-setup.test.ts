import { afterEach, describe, expect, it } from "vitest";
import type { AssistantMessage } from "../../src/agent/index.js";
import { agentSetupFromEnv } from "../../src/app/agent-setup.js";
import { parseEnv } from "../../src/config/index.js";
import {
  type ModelProvider,
  OPENAI_COMPLETIONS_API,
  openAIProvider,
  type ProviderOptions,
  registerProvider,
} from "../../src/llm/index.js";
import { ScriptedModel } from "../fakes/scripted-model.js";

const ENV = {
  OPENAI_API_KEY: "sk-test",
  OPENAI_BASE_URL: "http://127.0.0.1:9/v1",
  OPENAI_MODEL: "qwen3:8b",
  OPENAI_HEADER_TIMEOUT_MS: "1500",
  OPENAI_IDLE_TIMEOUT_MS: "0",
};

describe("agentSetupFromEnv and the provider registry", () => {
  afterEach(() => {
    registerProvider(OPENAI_COMPLETIONS_API, openAIProvider);
  });

  it("takes the stream function from the provider registered for the model's api", async () => {
    const built: ProviderOptions[] = [];
    const replacement: ModelProvider = {
      streamFn(options) {
        built.push(options);
        const model = new ScriptedModel([]);
        model.fallback = () => ({ text: "from the registered provider" });
        return model.streamFn;
      },
    };
    registerProvider(OPENAI_COMPLETIONS_API, replacement);

    const setup = agentSetupFromEnv(parseEnv(ENV));
    const stream = await setup.streamFn(
      setup.model,
      { systemPrompt: "", messages: [{ role: "user", content: "hi", timestamp: 0 }] },
      {},
    );
    const message: AssistantMessage = await stream.result();

    expect(message.content).toEqual([{ type: "text", text: "from the registered provider" }]);
    expect(built).toHaveLength(1);
    expect(built[0]).toMatchObject({
      apiKey: "sk-test",
      baseURL: "http://127.0.0.1:9/v1",
      timeoutMs: 1500,
      idleTimeoutMs: 0,
    });
  });
});
