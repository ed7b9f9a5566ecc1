import type {
  AssistantMessage,
  AssistantMessageEvent,
  Model,
  StopReason,
  TextContent,
  ThinkingContent,
  ToolCall,
} from "../agent/index.js";
import { describeFinishReason } from "./provider-errors.js";
import { parseStreamingJson } from "./streaming-json.js";
import { type ChatUsagePayload, emptyUsage, type ModelPrices, mapUsage } from "./usage.js";

/** The parts of a streamed chat-completions chunk this adapter reads (a superset of the SDK's type). */
export interface ChatChunk {
  id?: string;
  model?: string;
  choices?: ChatChunkChoice[] | null;
  usage?: ChatUsagePayload | null;
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
  content?: string | null;
  refusal?: string | null;
  reasoning_content?: string | null;
  reasoning?: string | null;
  reasoning_text?: string | null;
  tool_calls?: ChatToolCallDelta[] | null;
  function_call?: { name?: string | null; arguments?: string | null } | null;
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
  contentIndex: number;
  buffer: string;
  /** `buffer.length` when `parsed` was computed; arguments are re-parsed only when read after a change. */
  parsedLength: number;
  parsed: Record<string, unknown>;
  /** True while the id is one we made up (the server sent none yet). */
  generatedId: boolean;
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
 * Turns chat-completions chunks into provider events (spec §11, pi-ai's `openai-completions` side).
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
  private readonly toolSlots = new Map<number, ToolSlot>();
  private lastToolIndex = -1;
  private finishReason: string | undefined;
  private readonly idPrefix = `call_${Math.random().toString(36).slice(2, 10)}`;

  constructor(model: Model, push: (event: AssistantMessageEvent) => void, prices?: ModelPrices) {
    this.push = push;
    this.prices = prices;
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
    const choice = chunk.choices?.[0];
    if (!choice) return;
    if (choice.usage) message.usage = mapUsage(choice.usage, this.prices);
    const delta = choice.delta;
    if (delta) {
      for (const field of REASONING_FIELDS) {
        const reasoning = delta[field];
        if (typeof reasoning === "string" && reasoning !== "") {
          this.appendThinking(reasoning, field);
          break;
        }
      }
      if (typeof delta.content === "string" && delta.content !== "") this.appendText(delta.content);
      if (typeof delta.refusal === "string" && delta.refusal !== "") this.appendText(delta.refusal);
      if (delta.tool_calls) {
        for (const call of delta.tool_calls) this.applyToolDelta(call);
      }
      if (delta.function_call) this.applyToolDelta({ index: 0, function: delta.function_call });
    }
    if (choice.finish_reason) this.finishReason = choice.finish_reason;
  }

  private appendText(delta: string): void {
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

  private appendThinking(delta: string, field: ReasoningField): void {
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

  /** Finds the slot a fragment belongs to: by `index`; without one, by id, else the latest call. */
  private slotIndex(call: ChatToolCallDelta): number {
    if (typeof call.index === "number") return call.index;
    if (call.id) {
      for (const [index, slot] of this.toolSlots) if (slot.block.id === call.id) return index;
      let next = 0;
      for (const index of this.toolSlots.keys()) next = Math.max(next, index + 1);
      return next;
    }
    return Math.max(0, this.lastToolIndex);
  }

  private applyToolDelta(call: ChatToolCallDelta): void {
    const index = this.slotIndex(call);
    this.lastToolIndex = index;
    const fn = call.function;
    let slot = this.toolSlots.get(index);
    if (!slot) {
      slot = this.openToolCall(index, call.id ?? undefined, fn?.name ?? "");
    } else {
      if (call.id && slot.generatedId && !this.idTaken(call.id)) {
        slot.block.id = call.id;
        slot.generatedId = false;
      }
      if (fn?.name && slot.block.name === "") slot.block.name = fn.name;
    }
    const raw = fn?.arguments;
    const fragment = typeof raw === "string" ? raw : raw == null ? "" : JSON.stringify(raw);
    if (fragment === "") return;
    slot.buffer += fragment;
    this.push({
      type: "toolcall_delta",
      contentIndex: slot.contentIndex,
      delta: fragment,
      partial: this.message,
    });
  }

  private idTaken(id: string): boolean {
    for (const slot of this.toolSlots.values()) if (slot.block.id === id) return true;
    return false;
  }

  private openToolCall(index: number, id: string | undefined, name: string): ToolSlot {
    const usable = id !== undefined && id !== "" && !this.idTaken(id);
    const block: ToolCall = {
      type: "toolCall",
      id: usable ? id : id ? `${id}_${index}` : `${this.idPrefix}_${index}`,
      name,
      arguments: {},
    };
    const contentIndex = this.message.content.push(block) - 1;
    const slot: ToolSlot = { block, contentIndex, buffer: "", parsedLength: 0, parsed: {}, generatedId: !id };
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
    this.toolSlots.set(index, slot);
    this.push({ type: "toolcall_start", contentIndex, partial: this.message });
    return slot;
  }

  /** Replaces every streaming `arguments` accessor with the object parsed from the complete buffer. */
  private settleToolCalls(): void {
    for (const slot of this.toolSlots.values()) settle(slot.block, parseStreamingJson(slot.buffer));
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
    if (reason === "stop" && this.toolSlots.size > 0) reason = "toolUse";
    message.stopReason = reason;
    this.push({ type: "done", reason, message });
    return message;
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

function settle(block: ToolCall, value: Record<string, unknown>): void {
  Object.defineProperty(block, "arguments", { value, enumerable: true, configurable: true, writable: true });
}
