import {
  createAssistantMessageEventStream,
  emptyAssistantMessage,
  type Model,
  type StreamFn,
} from "../agent/index.js";

/**
 * A stream function whose every request ends at once with an `error` event and `errorMessage`
 * (e.g. "No model is configured…"), without any network traffic; provider-neutral. Never throws.
 */
export function failedStreamFn(errorMessage: string): StreamFn {
  return (model: Model) => {
    const stream = createAssistantMessageEventStream();
    stream.push({
      type: "error",
      reason: "error",
      error: emptyAssistantMessage(model, "error", errorMessage),
    });
    return stream;
  };
}
