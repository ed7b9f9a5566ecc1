import type { ImageContent, Message, Model } from "../../agent/index.js";
import {
  type MessageVariant,
  missingResultParam,
  type OpenAIMessageOptions,
  type RenderedMessage,
  renderMessage,
  sendsImages,
  systemParam,
  type TranscriptRenderer,
  TranscriptWalk,
  toolImagesParam,
} from "./messages.js";

/** A message the request leaves out, remembered as such. */
const SKIPPED = null;
type Entry = RenderedMessage<string> | typeof SKIPPED;

/** One slot per {@link MessageVariant}: bit 0 images, bit 1 replayReasoning. */
function slotOf(variant: MessageVariant): number {
  return (variant.images ? 1 : 0) | (variant.replayReasoning ? 2 : 0);
}

/**
 * The transcript the last request with this first message sent: its messages, their items as JSON text
 * (comma-separated) and the walk's state after them (before the items that end a transcript).
 */
interface Sent {
  slot: number;
  messages: readonly Message[];
  json: string;
  walk: TranscriptWalk<string>;
}

/** `longer` begins with the objects of `prefix`. */
function startsWith(longer: readonly Message[], prefix: readonly Message[]): boolean {
  if (longer.length < prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) if (longer[i] !== prefix[i]) return false;
  return true;
}

function joined(head: string, items: readonly string[]): string {
  if (items.length === 0) return head;
  return head === "" ? items.join(",") : `${head},${items.join(",")}`;
}

/**
 * The JSON text of each transcript message as a chat-completions message, kept per message object (a
 * `WeakMap`, so it holds nothing longer than the transcript does) and per {@link MessageVariant}; and, per
 * transcript (keyed by its first message), the JSON of the messages the last request sent. A run sends the
 * same message objects on every turn, so a request converts and encodes only the messages added since the
 * last one, and when its transcript begins with the last request's messages (the same objects, in order)
 * it does not even walk them again. Any other transcript (a summary in front, a message left out) is walked
 * in full, from the per-message JSON.
 *
 * Messages are treated as immutable once sent: the agent loop never changes a message after it is in the
 * transcript (it replaces it). A changed message object would keep its old JSON here.
 */
export class OpenAIMessageCache {
  private readonly entries = new WeakMap<Message, Entry[]>();
  private readonly sent = new WeakMap<Message, Sent>();
  private readonly renderers: TranscriptRenderer<string>[] = [];
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

  /** The JSON items of `messages` in a request, comma-separated (no brackets, no system message). */
  transcriptJson(messages: readonly Message[], variant: MessageVariant): string {
    const first = messages[0];
    if (first === undefined) return "";
    const slot = slotOf(variant);
    const last = this.sent.get(first);
    let from = 0;
    let head = "";
    let walk: TranscriptWalk<string>;
    if (last && last.slot === slot && startsWith(messages, last.messages)) {
      from = last.messages.length;
      head = last.json;
      walk = last.walk.fork();
      this.reused += from;
    } else {
      walk = new TranscriptWalk(this.renderer(slot, variant));
    }
    for (let i = from; i < messages.length; i++) walk.add(messages[i] as Message);
    const json = joined(head, walk.out);
    this.sent.set(first, { slot, messages: messages.slice(), json, walk: walk.fork() });
    return joined(json, walk.end());
  }

  private renderer(slot: number, variant: MessageVariant): TranscriptRenderer<string> {
    let renderer = this.renderers[slot];
    if (!renderer) {
      const fixed: MessageVariant = { ...variant };
      renderer = {
        message: (message) => this.render(message, fixed),
        missingResult: (id) => JSON.stringify(missingResultParam(id)),
        toolImages: (images: readonly ImageContent[]) => JSON.stringify(toolImagesParam(images)),
      };
      this.renderers[slot] = renderer;
    }
    return renderer;
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
  const system = systemParam(systemPrompt, options);
  const items = cache.transcriptJson(messages, variant);
  return `[${joined(system ? JSON.stringify(system) : "", items === "" ? [] : [items])}]`;
}
