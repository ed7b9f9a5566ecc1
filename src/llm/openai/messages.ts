import type {
  ChatCompletionAssistantMessageParam,
  ChatCompletionContentPart,
  ChatCompletionMessageParam,
  ChatCompletionMessageToolCall,
} from "openai/resources/chat/completions";
import type {
  AssistantMessage,
  ImageContent,
  Message,
  Model,
  TextContent,
  ToolResultMessage,
  UserMessage,
} from "../../agent/index.js";

/** How {@link convertToOpenAIMessages} renders a transcript. */
export interface OpenAIMessageOptions {
  /** Role of the system prompt. Default `"system"` (OpenAI's reasoning models also accept `"developer"`). */
  systemRole?: "system" | "developer";
  /**
   * Send earlier thinking back on assistant messages, in the field it arrived in (`reasoning_content`
   * by default). Only for providers that require it (e.g. some reasoning models with tool calls);
   * default `false`, since most servers ignore or reject it.
   */
  replayReasoning?: boolean;
  /** Whether images are sent as `image_url` parts. Default: `model.input` includes `"image"` (or is unset). */
  supportsImages?: boolean;
}

/** Text of the tool message synthesized for a tool call that has no result in the transcript. */
export const MISSING_TOOL_RESULT_TEXT = "No result provided";
/** Stands in for an image when the model does not accept images. */
export const IMAGE_OMITTED_TEXT = "(image omitted: the model does not accept images)";
/** Introduces the user message carrying images that tool results returned. */
export const TOOL_IMAGES_TEXT = "Images returned by the tool calls above:";
/** Content of a tool message whose result had no text. */
export const EMPTY_TOOL_RESULT_TEXT = "(no output)";

const REASONING_FIELDS = new Set(["reasoning_content", "reasoning", "reasoning_text"]);

function imagePart(image: ImageContent): ChatCompletionContentPart {
  return { type: "image_url", image_url: { url: `data:${image.mimeType};base64,${image.data}` } };
}

function userContent(message: UserMessage, images: boolean): string | ChatCompletionContentPart[] {
  const content = message.content;
  if (typeof content === "string") return content;
  if (content.every((block) => block.type === "text")) {
    return (content as TextContent[]).map((block) => block.text).join("\n");
  }
  return content.map((block) =>
    block.type === "text"
      ? { type: "text", text: block.text }
      : images
        ? imagePart(block)
        : { type: "text", text: IMAGE_OMITTED_TEXT },
  );
}

function assistantParam(
  message: AssistantMessage,
  options: Pick<OpenAIMessageOptions, "replayReasoning">,
): ChatCompletionMessageParam | undefined {
  let text = "";
  let reasoning = "";
  let reasoningField = "reasoning_content";
  const toolCalls: ChatCompletionMessageToolCall[] = [];
  for (const block of message.content) {
    if (block.type === "text") text += block.text;
    else if (block.type === "thinking") {
      if (block.redacted) continue;
      reasoning += block.thinking;
      if (block.thinkingSignature && REASONING_FIELDS.has(block.thinkingSignature)) {
        reasoningField = block.thinkingSignature;
      }
    } else {
      toolCalls.push({
        id: block.id,
        type: "function",
        function: { name: block.name, arguments: JSON.stringify(block.arguments) },
      });
    }
  }
  if (text === "" && toolCalls.length === 0) return undefined;
  const param: ChatCompletionAssistantMessageParam = {
    role: "assistant",
    content: text === "" ? null : text,
  };
  if (toolCalls.length > 0) param.tool_calls = toolCalls;
  if (options.replayReasoning && reasoning !== "") {
    (param as unknown as Record<string, unknown>)[reasoningField] = reasoning;
  }
  return param;
}

/**
 * An answer an interrupt cut short (docs/agent-loop.md, deviation 6), as the model will read it next: the
 * text it had written (the user saw it in the chat, cut) and a line saying where and why it stopped. Its
 * tool calls are left out: their arguments may be cut too, and none of them ran (their `Operation aborted`
 * results are dropped with them). Undefined when it had written no text.
 */
function interruptedParam(message: AssistantMessage): ChatCompletionMessageParam | undefined {
  const text = message.content.map((block) => (block.type === "text" ? block.text : "")).join("");
  if (text.trim() === "") return undefined;
  const from = message.interrupted?.by ? ` from ${message.interrupted.by}` : "";
  return { role: "assistant", content: `${text}\n\n${INTERRUPTED_ANSWER_TEXT.replace("{from}", from)}` };
}

/** The line that ends an interrupted answer in the next request; `{from}` is " from <name>" or empty. */
export const INTERRUPTED_ANSWER_TEXT = "[This answer was cut off here by a new message{from}.]";

function toolText(message: ToolResultMessage, images: boolean): string {
  const parts: string[] = [];
  for (const block of message.content) {
    if (block.type === "text") parts.push(block.text);
    else if (!images) parts.push(IMAGE_OMITTED_TEXT);
  }
  const text = parts.join("\n");
  return text === "" ? EMPTY_TOOL_RESULT_TEXT : text;
}

/**
 * What the request holds for one transcript message, alone: its item (a message param, or its JSON text),
 * the tool calls it opens (assistant) and the images that follow its batch (tool result). Depends only on
 * the message and {@link MessageVariant}; where it goes (or whether it is dropped) is decided by
 * a {@link TranscriptWalk} from its neighbours.
 */
export interface RenderedMessage<T> {
  item: T;
  /** Ids of the tool calls an assistant message opens; empty for other messages. */
  toolCallIds: readonly string[];
  /** Images of a tool result, sent after its batch as one user message; empty for other messages. */
  images: readonly ImageContent[];
}

/**
 * Everything besides the message itself that its {@link RenderedMessage} depends on: whether images are
 * sent (user messages, tool results) and `replayReasoning` (assistant messages). The system role, the model
 * and the message's position change nothing else.
 */
export interface MessageVariant {
  images: boolean;
  replayReasoning: boolean;
}

/** Whether the request sends images, from the options and the model. */
export function sendsImages(model: Pick<Model, "input">, options: OpenAIMessageOptions): boolean {
  return options.supportsImages ?? (model.input === undefined || model.input.includes("image"));
}

const NO_IDS: readonly string[] = [];
const NO_IMAGES: readonly ImageContent[] = [];

/**
 * Renders one message as a message param (see {@link RenderedMessage}); `undefined` for an assistant
 * message the request leaves out (ended in `error`/`aborted`, or nothing left to send). Pure; never throws
 * on well-typed input.
 */
export function renderMessage(
  message: Message,
  variant: MessageVariant,
): RenderedMessage<ChatCompletionMessageParam> | undefined {
  if (message.role === "toolResult") {
    const images = variant.images
      ? message.content.filter((block): block is ImageContent => block.type === "image")
      : NO_IMAGES;
    return {
      item: { role: "tool", tool_call_id: message.toolCallId, content: toolText(message, variant.images) },
      toolCallIds: NO_IDS,
      images,
    };
  }
  if (message.role === "user") {
    return {
      item: { role: "user", content: userContent(message, variant.images) },
      toolCallIds: NO_IDS,
      images: NO_IMAGES,
    };
  }
  if (message.interrupted) {
    const param = interruptedParam(message);
    return param && { item: param, toolCallIds: NO_IDS, images: NO_IMAGES };
  }
  if (message.stopReason === "error" || message.stopReason === "aborted") return undefined;
  const param = assistantParam(message, variant);
  if (!param) return undefined;
  const toolCallIds =
    param.role === "assistant" && param.tool_calls ? param.tool_calls.map((call) => call.id) : NO_IDS;
  return { item: param, toolCallIds, images: NO_IMAGES };
}

/** How a {@link TranscriptWalk} renders messages and the items it synthesizes between them. */
export interface TranscriptRenderer<T> {
  message(message: Message): RenderedMessage<T> | undefined;
  /** The `tool` message for a tool call without a result. */
  missingResult(toolCallId: string): T;
  /** The user message carrying a batch's tool images. */
  toolImages(images: readonly ImageContent[]): T;
}

/**
 * The transcript rules of {@link convertToOpenAIMessages}, over any rendering: {@link add} appends a
 * message's items (and those it synthesizes before it) to `out` in request order, {@link end} the items
 * that close the transcript there. Only this walk looks at neighbours and positions, so a message's
 * {@link RenderedMessage} can be kept between requests; {@link fork} lets a longer transcript go on from a
 * walk over its beginning. O(1) per message plus the renderer's cost.
 */
export class TranscriptWalk<T> {
  private openCalls: string[] = [];
  private toolImages: ImageContent[] = [];

  constructor(
    private readonly render: TranscriptRenderer<T>,
    readonly out: T[] = [],
  ) {}

  /** Appends what `message` adds to the request. */
  add(message: Message): void {
    if (message.role === "toolResult") {
      const at = this.openCalls.indexOf(message.toolCallId);
      if (at < 0) return;
      this.openCalls.splice(at, 1);
      const rendered = this.render.message(message);
      if (!rendered) return;
      this.out.push(rendered.item);
      for (const image of rendered.images) this.toolImages.push(image);
      return;
    }
    this.closeBatch(this.out);
    const rendered = this.render.message(message);
    if (!rendered) return;
    this.out.push(rendered.item);
    if (rendered.toolCallIds.length > 0) this.openCalls = [...rendered.toolCallIds];
  }

  /** The items that end the transcript after the messages added so far; the walk itself goes on unchanged. */
  end(): T[] {
    const tail: T[] = [];
    for (const id of this.openCalls) tail.push(this.render.missingResult(id));
    if (this.toolImages.length > 0) tail.push(this.render.toolImages(this.toolImages));
    return tail;
  }

  /** A walk in the same state that appends to `out` instead. */
  fork(out: T[] = []): TranscriptWalk<T> {
    const walk = new TranscriptWalk(this.render, out);
    walk.openCalls = [...this.openCalls];
    walk.toolImages = [...this.toolImages];
    return walk;
  }

  private closeBatch(out: T[]): void {
    for (const item of this.end()) out.push(item);
    this.openCalls = [];
    this.toolImages = [];
  }
}

/** The `tool` message for a tool call without a result. */
export function missingResultParam(toolCallId: string): ChatCompletionMessageParam {
  return { role: "tool", tool_call_id: toolCallId, content: MISSING_TOOL_RESULT_TEXT };
}

/** The user message that carries a batch's tool images. */
export function toolImagesParam(images: readonly ImageContent[]): ChatCompletionMessageParam {
  return { role: "user", content: [{ type: "text", text: TOOL_IMAGES_TEXT }, ...images.map(imagePart)] };
}

/** The system message, or `undefined` for an empty prompt. */
export function systemParam(
  systemPrompt: string,
  options: OpenAIMessageOptions,
): ChatCompletionMessageParam | undefined {
  return systemPrompt === "" ? undefined : { role: options.systemRole ?? "system", content: systemPrompt };
}

/**
 * Renders an LLM transcript in chat-completions format: the system prompt first (omitted when empty),
 * user messages with text and images, assistant messages with text and `tool_calls` (thinking only
 * with `replayReasoning`), tool results as `tool` messages. Keeps the transcript valid for strict servers:
 * - assistant messages that ended in `error`/`aborted`, or carry neither text nor tool calls, are skipped —
 *   except an interrupted answer, whose text stays (ending in {@link INTERRUPTED_ANSWER_TEXT}) without its
 *   tool calls;
 * - a tool result whose call is not in the immediately preceding assistant message is dropped;
 * - a tool call without a result gets a `tool` message saying "No result provided";
 * - images from tool results follow the batch's `tool` messages as one user message (tool messages
 *   carry text only).
 * Pure and O(n); never throws on well-typed input. The provider sends the same messages as JSON kept per
 * message between requests (`OpenAIMessageCache`).
 */
export function convertToOpenAIMessages(
  systemPrompt: string,
  messages: readonly Message[],
  model: Pick<Model, "input">,
  options: OpenAIMessageOptions = {},
): ChatCompletionMessageParam[] {
  const variant: MessageVariant = {
    images: sendsImages(model, options),
    replayReasoning: options.replayReasoning === true,
  };
  const out: ChatCompletionMessageParam[] = [];
  const system = systemParam(systemPrompt, options);
  if (system) out.push(system);
  const walk = new TranscriptWalk<ChatCompletionMessageParam>(
    {
      message: (message) => renderMessage(message, variant),
      missingResult: missingResultParam,
      toolImages: toolImagesParam,
    },
    out,
  );
  for (const message of messages) walk.add(message);
  for (const item of walk.end()) out.push(item);
  return out;
}
