import type { ImageContent, Message, Model } from "../../agent/index.js";
import {
  type MessageVariant,
  missingResultParam,
  type OpenAIMessageOptions,
  type RenderedMessage,
  renderMessage,
  sendsImages,
  systemParam,
  toolImagesParam,
  walkTranscript,
} from "./messages.js";

/** A message the request leaves out, remembered as such. */
const SKIPPED = null;
type Entry = RenderedMessage<string> | typeof SKIPPED;

/** One slot per {@link MessageVariant}: bit 0 images, bit 1 replayReasoning. */
function slotOf(variant: MessageVariant): number {
  return (variant.images ? 1 : 0) | (variant.replayReasoning ? 2 : 0);
}

/**
 * The JSON text of each transcript message as a chat-completions message, kept per message object (a
 * `WeakMap`, so it holds nothing longer than the transcript does) and per {@link MessageVariant}. A run
 * sends the same message objects on every turn, so a request converts and encodes only the messages
 * added since the last one; the walk over the transcript (which messages go where, the synthesized
 * `tool` and tool-image messages) runs again every request and is cheap.
 *
 * Messages are treated as immutable once sent: the agent loop never changes a message after it is in the
 * transcript (it replaces it). A changed message object would keep its old JSON here.
 */
export class OpenAIMessageCache {
  private readonly entries = new WeakMap<Message, Entry[]>();
  /** Messages converted and encoded by this cache so far (the others were reused). */
  converted = 0;
  /** Messages whose JSON came from the cache. */
  reused = 0;

  /** The message's rendering with its item as JSON text; `undefined` when the request leaves it out. */
  render(message: Message, variant: MessageVariant): RenderedMessage<string> | undefined {
    const slot = slotOf(variant);
    let slots = this.entries.get(message);
    const cached = slots?.[slot];
    if (cached !== undefined) {
      this.reused++;
      return cached ?? undefined;
    }
    this.converted++;
    const rendered = renderMessage(message, variant);
    const entry: Entry = rendered
      ? { item: JSON.stringify(rendered.item), toolCallIds: rendered.toolCallIds, images: rendered.images }
      : SKIPPED;
    if (!slots) {
      slots = [];
      this.entries.set(message, slots);
    }
    slots[slot] = entry;
    return entry ?? undefined;
  }
}

/** The cache every stream function uses unless given its own. */
export const sharedMessageCache = new OpenAIMessageCache();

/**
 * The `messages` array of a chat-completions request as JSON text: the same JSON as
 * `JSON.stringify(convertToOpenAIMessages(systemPrompt, messages, model, options))`, built from `cache`.
 */
export function openAIMessagesJson(
  systemPrompt: string,
  messages: readonly Message[],
  model: Pick<Model, "input">,
  options: OpenAIMessageOptions,
  cache: OpenAIMessageCache,
): string {
  const variant: MessageVariant = {
    images: sendsImages(model, options),
    replayReasoning: options.replayReasoning === true,
  };
  const out: string[] = [];
  const system = systemParam(systemPrompt, options);
  if (system) out.push(JSON.stringify(system));
  walkTranscript(
    messages,
    {
      message: (message) => cache.render(message, variant),
      missingResult: (id) => JSON.stringify(missingResultParam(id)),
      toolImages: (images: readonly ImageContent[]) => JSON.stringify(toolImagesParam(images)),
    },
    out,
  );
  return `[${out.join(",")}]`;
}
