import type {
  AssistantMessage,
  AssistantMessageEvent,
  Model,
  StopReason,
  TextContent,
  ThinkingContent,
  ToolCall,
} from "../../agent/index.js";
import { describeFinishReason } from "../provider-errors.js";
import { parseStreamingJson } from "../streaming-json.js";
import { type TextChannel, ThinkTagSplitter } from "../think-tags.js";
import { type ChatUsagePayload, emptyUsage, type ModelPrices, mapUsage } from "../usage.js";

/** The parts of a streamed chat-completions chunk this adapter reads (a superset of the SDK's type). */
export interface ChatChunk {
  id?: string;
  model?: string;
  choices?: ChatChunkChoice[] | null;
  usage?: ChatUsagePayload | null;
  /** Groq's older streams carry usage only here (https://github.com/vercel/ai/issues/1651). */
  x_groq?: { usage?: ChatUsagePayload | null } | null;
}

/** One choice of a {@link ChatChunk}. Only `choices[0]` is read. */
export interface ChatChunkChoice {
  delta?: ChatChunkDelta | null;
  finish_reason?: string | null;
  /** Some servers (e.g. Moonshot) put usage on the choice. */
  usage?: ChatUsagePayload | null;
}

/** The incremental fields of a choice, including the reasoning fields non-OpenAI servers send. */
export interface ChatChunkDelta {
  /** A string, or typed parts (Mistral Magistral: `{type:"text",text}` and `{type:"thinking",thinking:[…]}`). */
  content?: string | ChatContentPart[] | null;
  refusal?: string | null;
  reasoning_content?: string | null;
  reasoning?: string | null;
  reasoning_text?: string | null;
  /** OpenRouter / Snowflake Cortex: `{type:"reasoning.text",text}` or `{type:"reasoning.summary",summary}`. */
  reasoning_details?: ChatReasoningDetail[] | null;
  tool_calls?: ChatToolCallDelta[] | null;
  function_call?: { name?: string | null; arguments?: string | null } | null;
}

/** One typed part of an array `content` (unknown part types are ignored). */
export interface ChatContentPart {
  type?: string;
  text?: string | null;
  /** Magistral: a list of `{type:"text", text}` parts, or a string. */
  thinking?: string | { type?: string; text?: string | null }[] | null;
}

/** One entry of `reasoning_details` (encrypted entries carry no readable text and are skipped). */
export interface ChatReasoningDetail {
  type?: string;
  text?: string | null;
  summary?: string | null;
}

/** Options of {@link ChatChunkAccumulator}. */
export interface ChatChunkAccumulatorOptions {
  /** Prices per million tokens, for the usage's cost. */
  prices?: ModelPrices | undefined;
  /**
   * What `<think>…</think>` at the start of `content` is: `"thinking"` (default; DeepSeek-R1 distills,
   * Qwen3) or `"text"` (keep the tags in the answer, for servers that mean them literally).
   */
  thinkTags?: "thinking" | "text" | undefined;
}

/** One tool-call fragment. `index` identifies the call; `id` and `name` usually come only first. */
export interface ChatToolCallDelta {
  index?: number;
  id?: string | null;
  type?: string;
  function?: { name?: string | null; arguments?: unknown } | null;
}

type ReasoningField = "reasoning_content" | "reasoning" | "reasoning_text";

/** The scratch state of one streamed tool call; the JSON buffer lives here, not on the block. */
interface ToolSlot {
  block: ToolCall;
  /** The id the server sent for this call (the block's id may be made unique). */
  serverId: string | undefined;
  contentIndex: number;
  buffer: string;
  /** `buffer.length` when `parsed` was computed; arguments are re-parsed only when read after a change. */
  parsedLength: number;
  parsed: Record<string, unknown>;
}

/** Reasoning fields in the order pi-ai reads them: the first non-empty one wins. */
const REASONING_FIELDS: readonly ReasoningField[] = ["reasoning_content", "reasoning", "reasoning_text"];

/** `finish_reason` → `stopReason` for reasons that end a normal answer. */
const FINISH_REASONS: Record<string, Exclude<StopReason, "error" | "aborted">> = {
  stop: "stop",
  end: "stop",
  length: "length",
  tool_calls: "toolUse",
  function_call: "toolUse",
};

/**
 * Turns chat-completions chunks into provider events (docs/agent-loop.md §5, as pi-ai's
 * `openai-completions` does).
 * `message` is the live partial: blocks are appended in order of first appearance, text and thinking
 * deltas extend the last block when it has the same type, tool calls are keyed by `index`. All `*_end`
 * events are emitted by {@link finish}, in block order.
 *
 * A streaming tool call's `arguments` is an accessor that parses the buffer with the salvage parser
 * when read after a new fragment (so it is always a current object, and a consumer that never reads
 * it mid-stream pays nothing); {@link finish} and {@link fail} replace it with a plain property
 * parsed from the complete buffer.
 */
export class ChatChunkAccumulator {
  readonly message: AssistantMessage;
  private readonly push: (event: AssistantMessageEvent) => void;
  private readonly prices: ModelPrices | undefined;
  /** Every tool call in order of appearance. */
  private readonly slots: ToolSlot[] = [];
  /** The call each server `index` currently refers to (a new id on an index starts a new call). */
  private readonly byIndex = new Map<number, ToolSlot>();
  private lastSlot: ToolSlot | undefined;
  private finishReason: string | undefined;
  private readonly idPrefix = `call_${Math.random().toString(36).slice(2, 10)}`;
  private readonly splitter: ThinkTagSplitter | undefined;
  /** Characters of text, thinking and tool arguments received so far. */
  outputChars = 0;

  constructor(
    model: Model,
    push: (event: AssistantMessageEvent) => void,
    options: ChatChunkAccumulatorOptions = {},
  ) {
    this.push = push;
    this.prices = options.prices;
    if (options.thinkTags !== "text") {
      this.splitter = new ThinkTagSplitter((channel: TextChannel, text: string) =>
        channel === "text" ? this.appendText(text) : this.appendThinking(text, "think_tag"),
      );
    }
    this.message = {
      role: "assistant",
      content: [],
      api: model.api,
      provider: model.provider,
      model: model.id,
      usage: emptyUsage(),
      stopReason: "stop",
      timestamp: Date.now(),
    };
  }

  /** Emits `start`; call once the response headers arrived. */
  start(): void {
    this.push({ type: "start", partial: this.message });
  }

  /** True once any chunk carried a `finish_reason`. */
  get finished(): boolean {
    return this.finishReason !== undefined;
  }

  /** Applies one chunk, emitting `*_start`/`*_delta` events. */
  add(chunk: ChatChunk): void {
    const message = this.message;
    if (message.responseId === undefined && chunk.id) message.responseId = chunk.id;
    if (chunk.model && message.responseModel !== chunk.model) message.responseModel = chunk.model;
    if (chunk.usage) message.usage = mapUsage(chunk.usage, this.prices);
    else if (chunk.x_groq?.usage) message.usage = mapUsage(chunk.x_groq.usage, this.prices);
    const choice = chunk.choices?.[0];
    if (!choice) return;
    if (choice.usage) message.usage = mapUsage(choice.usage, this.prices);
    const delta = choice.delta;
    if (delta) {
      let reasoned = false;
      for (const field of REASONING_FIELDS) {
        const reasoning = delta[field];
        if (typeof reasoning === "string" && reasoning !== "") {
          this.appendThinking(reasoning, field);
          reasoned = true;
          break;
        }
      }
      // OpenRouter sends `reasoning` and the same text in `reasoning_details`: read the details only alone.
      if (!reasoned && Array.isArray(delta.reasoning_details))
        this.applyReasoningDetails(delta.reasoning_details);
      const content = delta.content;
      if (typeof content === "string") {
        if (content !== "") this.appendContent(content);
      } else if (Array.isArray(content)) {
        this.applyContentParts(content);
      }
      if (typeof delta.refusal === "string" && delta.refusal !== "") this.appendText(delta.refusal);
      if (delta.tool_calls) {
        for (const call of delta.tool_calls) this.applyToolDelta(call);
      }
      if (delta.function_call) this.applyToolDelta({ index: 0, function: delta.function_call });
    }
    if (choice.finish_reason) this.finishReason = choice.finish_reason;
  }

  private appendContent(text: string): void {
    if (this.splitter) this.splitter.push(text);
    else this.appendText(text);
  }

  private applyContentParts(parts: ChatContentPart[]): void {
    for (const part of parts) {
      if (!part || typeof part !== "object") continue;
      if (part.type === "text" && typeof part.text === "string" && part.text !== "") {
        this.appendContent(part.text);
      } else if (part.type === "thinking") {
        const thinking = part.thinking;
        if (typeof thinking === "string") {
          if (thinking !== "") this.appendThinking(thinking, "thinking");
        } else if (Array.isArray(thinking)) {
          for (const inner of thinking) {
            const text = inner?.text;
            if (typeof text === "string" && text !== "") this.appendThinking(text, "thinking");
          }
        }
      }
    }
  }

  private applyReasoningDetails(details: ChatReasoningDetail[]): void {
    for (const detail of details) {
      if (!detail || typeof detail !== "object") continue;
      const text =
        detail.type === "reasoning.summary"
          ? detail.summary
          : detail.type === "reasoning.text"
            ? detail.text
            : undefined;
      if (typeof text === "string" && text !== "") this.appendThinking(text, "reasoning_details");
    }
  }

  private appendText(delta: string): void {
    this.outputChars += delta.length;
    const content = this.message.content;
    let contentIndex = content.length - 1;
    const last = content[contentIndex];
    if (last?.type === "text") {
      last.text += delta;
    } else {
      const block: TextContent = { type: "text", text: delta };
      contentIndex = content.push(block) - 1;
      this.push({ type: "text_start", contentIndex, partial: this.message });
    }
    this.push({ type: "text_delta", contentIndex, delta, partial: this.message });
  }

  private appendThinking(
    delta: string,
    field: ReasoningField | "thinking" | "think_tag" | "reasoning_details",
  ): void {
    this.outputChars += delta.length;
    const content = this.message.content;
    let contentIndex = content.length - 1;
    const last = content[contentIndex];
    if (last?.type === "thinking") {
      last.thinking += delta;
    } else {
      const block: ThinkingContent = { type: "thinking", thinking: delta, thinkingSignature: field };
      contentIndex = content.push(block) - 1;
      this.push({ type: "thinking_start", contentIndex, partial: this.message });
    }
    this.push({ type: "thinking_delta", contentIndex, delta, partial: this.message });
  }

  /**
   * The call a fragment belongs to, or `undefined` for a new call. By `index`, unless the fragment
   * brings a different id (Ollama ≥ 0.20, vLLM and SGLang send parallel calls all with `index: 0`,
   * https://github.com/ollama/ollama/issues/15457) or, without ids, a second name after complete
   * arguments. Without an index: by id, else the latest call.
   */
  private slotFor(call: ChatToolCallDelta): ToolSlot | undefined {
    const id = call.id || undefined;
    if (typeof call.index === "number") {
      const slot = this.byIndex.get(call.index);
      if (!slot) return undefined;
      if (id !== undefined && slot.serverId !== undefined && id !== slot.serverId) return undefined;
      const name = call.function?.name;
      if (
        id === undefined &&
        name &&
        slot.block.name !== "" &&
        slot.serverId === undefined &&
        isComplete(slot)
      ) {
        return undefined;
      }
      return slot;
    }
    if (id !== undefined) return this.slots.find((slot) => slot.serverId === id);
    return this.lastSlot;
  }

  private applyToolDelta(call: ChatToolCallDelta): void {
    const fn = call.function;
    let slot = this.slotFor(call);
    if (!slot) {
      slot = this.openToolCall(call.id || undefined, fn?.name ?? "");
    } else {
      if (call.id && slot.serverId === undefined) {
        slot.serverId = call.id;
        if (!this.idTaken(call.id)) slot.block.id = call.id;
      }
      if (fn?.name && slot.block.name === "") slot.block.name = fn.name;
    }
    if (typeof call.index === "number") this.byIndex.set(call.index, slot);
    this.lastSlot = slot;
    const raw = fn?.arguments;
    const fragment = typeof raw === "string" ? raw : raw == null ? "" : JSON.stringify(raw);
    if (fragment === "") return;
    slot.buffer += fragment;
    this.outputChars += fragment.length;
    this.push({
      type: "toolcall_delta",
      contentIndex: slot.contentIndex,
      delta: fragment,
      partial: this.message,
    });
  }

  private idTaken(id: string): boolean {
    for (const slot of this.slots) if (slot.block.id === id) return true;
    return false;
  }

  private openToolCall(id: string | undefined, name: string): ToolSlot {
    const position = this.slots.length;
    const block: ToolCall = {
      type: "toolCall",
      id: id === undefined ? `${this.idPrefix}_${position}` : this.idTaken(id) ? `${id}_${position}` : id,
      name,
      arguments: {},
    };
    const contentIndex = this.message.content.push(block) - 1;
    const slot: ToolSlot = {
      block,
      serverId: id,
      contentIndex,
      buffer: "",
      parsedLength: 0,
      parsed: {},
    };
    Object.defineProperty(block, "arguments", {
      enumerable: true,
      configurable: true,
      get: () => {
        if (slot.parsedLength !== slot.buffer.length) {
          slot.parsed = parseStreamingJson(slot.buffer);
          slot.parsedLength = slot.buffer.length;
        }
        return slot.parsed;
      },
      set: (value: Record<string, unknown>) => settle(block, value),
    });
    this.slots.push(slot);
    this.push({ type: "toolcall_start", contentIndex, partial: this.message });
    return slot;
  }

  /** Replaces every streaming `arguments` accessor with the object parsed from the complete buffer. */
  private settleToolCalls(): void {
    this.splitter?.flush();
    for (const slot of this.slots) settle(slot.block, parseStreamingJson(slot.buffer));
  }

  /**
   * Ends a stream that finished normally: emits the `*_end` events in block order, maps
   * `finish_reason` and emits `done` (or `error` for `content_filter` and unknown reasons).
   */
  finish(): AssistantMessage {
    this.settleToolCalls();
    const message = this.message;
    message.content.forEach((block, contentIndex) => {
      if (block.type === "text") {
        this.push({ type: "text_end", contentIndex, content: block.text, partial: message });
      } else if (block.type === "thinking") {
        this.push({ type: "thinking_end", contentIndex, content: block.thinking, partial: message });
      } else {
        this.push({ type: "toolcall_end", contentIndex, toolCall: block, partial: message });
      }
    });
    const raw = this.finishReason ?? "stop";
    let reason = FINISH_REASONS[raw];
    if (reason === undefined) {
      message.stopReason = "error";
      message.errorMessage = describeFinishReason(raw);
      this.push({ type: "error", reason: "error", error: message });
      return message;
    }
    // Some servers say `stop` while returning tool calls; the calls are what matters.
    if (reason === "stop" && this.slots.length > 0) reason = "toolUse";
    message.stopReason = reason;
    this.push({ type: "done", reason, message });
    return message;
  }

  /**
   * Ends an answer stopped at `limit` characters: a note saying so is appended as text (the user and the
   * model both read it), then `*_end` events and `done` with `stopReason: "length"` (the loop refuses
   * tool calls of a cut answer).
   */
  cutOff(limit: number): AssistantMessage {
    this.splitter?.flush();
    this.appendText(`\n\n${cutNote(limit)}`);
    this.finishReason = "length";
    return this.finish();
  }

  /** Ends the stream with a failure: partial content is kept (arguments settled), no `*_end` events. */
  fail(reason: "aborted" | "error", errorMessage: string): AssistantMessage {
    this.settleToolCalls();
    const message = this.message;
    message.stopReason = reason;
    message.errorMessage = errorMessage;
    this.push({ type: "error", reason, error: message });
    return message;
  }
}

/** The note that ends an answer cut at `limit` characters. */
export function cutNote(limit: number): string {
  return `_(The answer was cut off here: it reached the limit of ${limit.toLocaleString("en-US")} characters.)_`;
}

/** True when the call's arguments so far are one complete JSON object. */
function isComplete(slot: ToolSlot): boolean {
  const text = slot.buffer.trim();
  if (!text.startsWith("{") || !text.endsWith("}")) return false;
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

function settle(block: ToolCall, value: Record<string, unknown>): void {
  Object.defineProperty(block, "arguments", { value, enumerable: true, configurable: true, writable: true });
}
