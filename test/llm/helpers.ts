import type {
  AssistantMessage,
  AssistantMessageEvent,
  AssistantMessageEventStream,
  LlmContext,
  Model,
  StreamOptions,
  UserMessage,
} from "../../src/agent/index.js";
import { createOpenAIStreamFn, type OpenAIProviderOptions, openAIModel } from "../../src/llm/index.js";
import type { FakeOpenAIServer } from "../fakes/openai-server.js";

export function user(text: string): UserMessage {
  return { role: "user", content: text, timestamp: 0 };
}

/** A model served by the fake server. */
export function fakeModel(
  server: FakeOpenAIServer,
  init: Partial<Parameters<typeof openAIModel>[0]> = {},
): Model {
  return openAIModel({ id: "fake-model", baseUrl: server.baseURL, ...init });
}

/** Every event of a stream, and its result. */
export async function drain(
  stream: AssistantMessageEventStream,
): Promise<{ events: AssistantMessageEvent[]; types: string[]; message: AssistantMessage }> {
  const events: AssistantMessageEvent[] = [];
  for await (const event of stream) events.push(event);
  return { events, types: events.map((event) => event.type), message: await stream.result() };
}

/** One request through a fresh stream function (no retries unless asked). */
export async function request(
  server: FakeOpenAIServer,
  options: {
    provider?: OpenAIProviderOptions;
    stream?: StreamOptions;
    context?: Partial<LlmContext>;
    model?: Model;
  } = {},
) {
  const streamFn = createOpenAIStreamFn({ apiKey: "sk-test-key", maxRetries: 0, ...options.provider });
  const context: LlmContext = { systemPrompt: "", messages: [user("hi")], ...options.context };
  const stream = await streamFn(options.model ?? fakeModel(server), context, options.stream ?? {});
  return drain(stream);
}
