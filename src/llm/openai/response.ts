import { APIError } from "openai";
import { STREAM_CLOSED_MESSAGE } from "../provider-errors.js";
import type { RequestSignal } from "../request-signal.js";
import { SseParser } from "../sse.js";
import type { ChatChunk, ChatChunkAccumulator, ChatToolCallDelta } from "./chunks.js";

/** Limits and context of {@link readChatResponse}. */
export interface ReadChatResponseOptions {
  maxOutputChars: number;
}

/** Data-only keep-alives some relays send (`data: : keep-alive`, `data: ping`); never an answer. */
const KEEP_ALIVE_DATA = /^\s*(?::.*|ping|keep[-_ ]?alive)?\s*$/i;

/**
 * Reads a chat-completions response into `accumulator` and ends it (`done` or `error`). An SSE body is
 * parsed here, not by the SDK, so every byte (keep-alive comments included) resets the idle timer and the
 * end of the stream is known: without `finish_reason` and without `[DONE]` the answer is incomplete and
 * ends as an error (what streamed is kept). A JSON body (proxies that ignore `stream: true`) is read as
 * one complete answer. Past `maxOutputChars` the request is stopped and the answer ends with
 * `stopReason: "length"` and a note. Throws what the body or the server's error events throw.
 */
export async function readChatResponse(
  response: Response,
  accumulator: ChatChunkAccumulator,
  request: RequestSignal,
  options: ReadChatResponseOptions,
): Promise<void> {
  const type = response.headers.get("content-type") ?? "";
  if (type.includes("application/json")) {
    const text = await response.text();
    request.touch();
    if (readJsonAnswer(text, accumulator, response.headers, options.maxOutputChars)) {
      if (accumulator.outputChars > options.maxOutputChars) accumulator.cutOff(options.maxOutputChars);
      else accumulator.finish();
      return;
    }
    // Not a completion object: some servers label SSE as JSON.
    const state = sseState(accumulator, response.headers);
    state.parser.feed(text);
    state.parser.end();
    end(accumulator, state.done, false, options.maxOutputChars);
    return;
  }
  const state = sseState(accumulator, response.headers);
  const body = response.body as AsyncIterable<Uint8Array> | null;
  let cut = false;
  if (body) {
    const decoder = new TextDecoder();
    for await (const bytes of body) {
      request.touch();
      state.parser.feed(decoder.decode(bytes, { stream: true }));
      if (accumulator.outputChars > options.maxOutputChars) {
        cut = true;
        break;
      }
    }
    if (!cut) {
      state.parser.feed(decoder.decode());
      state.parser.end();
    }
  }
  if (cut) request.stop();
  end(accumulator, state.done, cut, options.maxOutputChars);
}

function end(accumulator: ChatChunkAccumulator, sawDone: boolean, cut: boolean, limit: number): void {
  if (cut) accumulator.cutOff(limit);
  else if (accumulator.finished || sawDone) accumulator.finish();
  else accumulator.fail("error", STREAM_CLOSED_MESSAGE);
}

function sseState(accumulator: ChatChunkAccumulator, headers: Headers) {
  const state = {
    done: false,
    parser: new SseParser((data) => {
      if (state.done) return;
      if (data.startsWith("[DONE]")) {
        state.done = true;
        return;
      }
      if (KEEP_ALIVE_DATA.test(data)) return;
      const parsed = JSON.parse(data) as ChatChunk & { error?: unknown };
      if (parsed.error !== undefined && parsed.error !== null) {
        throw new APIError(undefined, parsed.error as object, undefined, headers);
      }
      accumulator.add(parsed);
    }),
  };
  return state;
}

interface CompletionMessage {
  content?: unknown;
  reasoning_content?: unknown;
  reasoning?: unknown;
  tool_calls?: (ChatToolCallDelta & { index?: number })[] | null;
}

/** Feeds a non-streamed completion as one chunk; false when `text` is not a completion object. */
function readJsonAnswer(
  text: string,
  accumulator: ChatChunkAccumulator,
  headers: Headers,
  maxOutputChars: number,
): boolean {
  let parsed: {
    id?: string;
    model?: string;
    choices?: { message?: CompletionMessage; finish_reason?: string | null }[];
    usage?: ChatChunk["usage"];
    error?: unknown;
  };
  try {
    parsed = JSON.parse(text);
  } catch {
    return false;
  }
  if (parsed && typeof parsed === "object" && parsed.error) {
    throw new APIError(undefined, parsed.error as object, undefined, headers);
  }
  const choice = parsed?.choices?.[0];
  if (!choice?.message) return false;
  const message = choice.message;
  const delta = { ...message } as NonNullable<NonNullable<ChatChunk["choices"]>[number]["delta"]>;
  // The answer cap holds for a whole-body answer too: keep one character past it, so the cut is seen.
  if (typeof delta.content === "string" && delta.content.length > maxOutputChars) {
    delta.content = delta.content.slice(0, maxOutputChars + 1);
    delete delta.tool_calls;
  }
  if (Array.isArray(message.tool_calls)) {
    delta.tool_calls = message.tool_calls.map((call, index) => ({ ...call, index: call.index ?? index }));
  }
  const chunk: ChatChunk = {
    choices: [{ delta, finish_reason: choice.finish_reason ?? "stop" }],
  };
  if (parsed.id) chunk.id = parsed.id;
  if (parsed.model) chunk.model = parsed.model;
  if (parsed.usage) chunk.usage = parsed.usage;
  accumulator.add(chunk);
  return true;
}
