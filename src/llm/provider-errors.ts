/** What went wrong talking to the model provider, as a tag a caller can branch on. */
export type ProviderFailureKind =
  | "aborted"
  | "auth"
  | "forbidden"
  | "not-found"
  | "rate-limited"
  | "quota"
  | "bad-request"
  | "context-exceeded"
  | "server"
  | "unreachable"
  | "timeout"
  | "idle-timeout"
  | "cut-off"
  | "stream-error"
  | "finish-reason"
  | "unknown";

/** A classified provider failure with one human sentence (never containing the API key). */
export interface ProviderFailure {
  kind: ProviderFailureKind;
  /** HTTP status, when the server answered. */
  status?: number;
  /** The text users see, e.g. "Rate limited by the model provider (429); retry after 12s." */
  message: string;
  /** From `retry-after-ms` / `retry-after`, when the server sent one. */
  retryAfterMs?: number;
  /** `context-exceeded`: the server's context window in tokens, when it said. */
  contextWindow?: number;
  /** `context-exceeded`: the prompt's size in tokens as the server counted it, when it said. */
  promptTokens?: number;
}

/** What {@link describeProviderFailure} needs to word a failure. */
export interface FailureContext {
  baseURL: string;
  model: string;
  /** Scrubbed from any provider text quoted in the message. */
  apiKey?: string | undefined;
  /** The header timeout, quoted in timeout messages. */
  timeoutMs?: number | undefined;
  /** True once response headers arrived: a transport failure after that cut the stream. */
  streamStarted: boolean;
  /** Where the key is configured, quoted in the 401 hint. Default `OPENAI_API_KEY`. */
  apiKeyHint?: string | undefined;
}

/** The text of an aborted request's final message (same as the loop's). */
export const ABORTED_MESSAGE = "Request was aborted";
/** The text of a stream that ended by transport failure after it started. */
export const CUT_OFF_MESSAGE = "The model stream was cut off before it finished.";
/** The text of a stream that ended cleanly but without `finish_reason` and without `[DONE]`. */
export const STREAM_CLOSED_MESSAGE = "The model server closed the stream before the answer was complete.";

/** Thrown internally when no chunk arrived for `idleTimeoutMs`; described as `idle-timeout`. */
export class StreamIdleTimeoutError extends Error {
  constructor(readonly idleMs: number) {
    super(`no data for ${idleMs}ms`);
  }
}

/** `scheme://host[:port]/path` without credentials or query (an Azure-style `?api-key=` never leaks). */
export function displayBaseURL(baseURL: string): string {
  try {
    const url = new URL(baseURL);
    return `${url.protocol}//${url.host}${url.pathname.replace(/\/$/, "")}`;
  } catch {
    return "the configured base URL";
  }
}

/** Provider text fit to quote: the API key and `sk-…` keys masked, whitespace collapsed, at most 300 characters. */
export function scrubProviderText(text: string, apiKey: string | undefined): string {
  let out = apiKey && apiKey.length >= 4 ? text.split(apiKey).join("***") : text;
  out = out.replace(/\b(sk-[A-Za-z0-9_-]{3})[A-Za-z0-9_*-]{6,}/g, "$1***");
  out = out.replace(/\s+/g, " ").trim();
  return out.length > 300 ? `${out.slice(0, 297)}...` : out;
}

/**
 * An HTTP error answer (or an error event inside a stream, without `status`) in provider-neutral terms, so
 * every provider words the same statuses the same way. `body` is the parsed error object the server sent
 * (OpenAI-style `{message, type, code}` or a nested `{error: {…}}`), `message` the client's own text.
 */
export interface HttpFailureInfo {
  status?: number | undefined;
  body: unknown;
  message: string;
  headers?: Headers | undefined;
}

/** The provider's own explanation of an HTTP error, if it sent one. */
function providerDetail(err: HttpFailureInfo): string | undefined {
  const body = err.body as { message?: unknown } | undefined;
  if (body && typeof body.message === "string" && body.message.trim() !== "") return body.message;
  const text = err.message.replace(/^\d{3}\s*/, "");
  if (text === "" || text === "status code (no body)") return undefined;
  return text;
}

/** Milliseconds from `retry-after-ms` or `retry-after` (seconds or an HTTP date). */
export function retryAfterMs(headers: Headers | undefined): number | undefined {
  if (!headers) return undefined;
  const ms = Number.parseFloat(headers.get("retry-after-ms") ?? "");
  if (Number.isFinite(ms) && ms >= 0) return ms;
  const raw = headers.get("retry-after");
  if (!raw) return undefined;
  const seconds = Number.parseFloat(raw);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(raw);
  return Number.isFinite(date) ? Math.max(0, date - Date.now()) : undefined;
}

/**
 * A configured limit exactly as set: `500 ms`, `1.5 s`, `120 s`, `10 min` (whole minutes from 2 min).
 * Never rounds, so "1.5 s" is not reported as "2s".
 */
export function formatLimit(ms: number): string {
  if (ms < 1000) return `${ms} ms`;
  if (ms >= 120_000 && ms % 60_000 === 0) return `${ms / 60_000} min`;
  return `${Number((ms / 1000).toFixed(3))} s`;
}

function formatDelay(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  const seconds = Math.ceil(ms / 1000);
  if (seconds < 120) return `${seconds}s`;
  return `${Math.ceil(seconds / 60)} min`;
}

const CONNECTION_CODES: Record<string, string> = {
  ECONNREFUSED: "connection refused",
  ENOTFOUND: "host not found",
  EAI_AGAIN: "host not found",
  ECONNRESET: "connection reset",
  EPIPE: "connection reset",
  UND_ERR_SOCKET: "connection reset",
  ETIMEDOUT: "connection timed out",
  UND_ERR_CONNECT_TIMEOUT: "connection timed out",
  EHOSTUNREACH: "host unreachable",
  ENETUNREACH: "network unreachable",
};

/** The first known network error code along the `cause` chain (and inside AggregateErrors). */
function networkReason(err: unknown): string | undefined {
  const seen = new Set<unknown>();
  const queue: unknown[] = [err];
  while (queue.length > 0) {
    const current = queue.shift();
    if (!current || typeof current !== "object" || seen.has(current)) continue;
    seen.add(current);
    const { code, cause, errors } = current as { code?: unknown; cause?: unknown; errors?: unknown };
    if (typeof code === "string") {
      const known = CONNECTION_CODES[code];
      if (known) return known;
      if (code.includes("CERT") || code.includes("SSL") || code.startsWith("ERR_TLS")) {
        return "TLS certificate problem";
      }
    }
    queue.push(cause);
    if (Array.isArray(errors)) queue.push(...errors);
  }
  return undefined;
}

/** A failure to reach the server (`where` is its display URL): "closed the connection" or "could not reach". */
export function unreachable(err: unknown, where: string, ctx: FailureContext): ProviderFailure {
  const reason = networkReason(err);
  if (reason === "connection reset") {
    return {
      kind: "unreachable",
      message: `The model server at ${where} closed the connection before answering.`,
    };
  }
  const text = reason ?? scrubProviderText(err instanceof Error ? err.message : String(err), ctx.apiKey);
  return { kind: "unreachable", message: `Could not reach the model server at ${where} (${text}).` };
}

/**
 * Context-exceeded errors as servers word them: llama.cpp `exceed_context_size_error` with `n_ctx` and
 * `n_prompt_tokens` (https://github.com/ggml-org/llama.cpp/pull/15780, sent as 400 or, in older builds,
 * 500); OpenAI, Groq and DeepSeek `context_length_exceeded` / "This model's maximum context length is N
 * tokens"; vLLM's same sentence with "However, you requested M tokens"
 * (https://huggingface.co/lmsys/vicuna-13b-v1.5-16k/discussions/8); Mistral "too large for model with N
 * maximum context length"; LM Studio "greater than the context length"; Anthropic-style "prompt is too long".
 */
export function contextExceeded(err: HttpFailureInfo): ProviderFailure | undefined {
  const body = (err.body ?? {}) as Record<string, unknown>;
  const nested = (typeof body.error === "object" && body.error !== null ? body.error : body) as Record<
    string,
    unknown
  >;
  const text = [nested.message, body.message, err.message].filter((v) => typeof v === "string").join(" ");
  const tagged =
    nested.type === "exceed_context_size_error" ||
    nested.code === "context_length_exceeded" ||
    nested.type === "context_length_exceeded";
  const worded =
    /maximum context length|context length exceeded|exceeds? (the )?(available )?context (size|length|window)|too large for model with \d+ maximum context length|greater than the context length|prompt is too long|context window exceeded/i.test(
      text,
    );
  if (!tagged && !worded) return undefined;
  const failure: ProviderFailure = {
    kind: "context-exceeded",
    message: "The conversation is too long for the model's context window.",
  };
  if (typeof err.status === "number") failure.status = err.status;
  const windowTokens =
    numberField(nested.n_ctx) ??
    firstNumber(text, /maximum context length is (\d+)/i) ??
    firstNumber(text, /model with (\d+) maximum context length/i) ??
    firstNumber(text, /context (?:length|size|window) (?:is |of )?\(?(\d+)/i);
  const prompt =
    numberField(nested.n_prompt_tokens) ??
    firstNumber(text, /\((\d+) in the messages/i) ??
    firstNumber(text, /resulted in (\d+) tokens/i) ??
    firstNumber(text, /(?:requested|contains) (\d+) tokens/i);
  if (windowTokens !== undefined) failure.contextWindow = windowTokens;
  if (prompt !== undefined) failure.promptTokens = prompt;
  if (windowTokens !== undefined) {
    failure.message = `The conversation is too long for the model's context window (${windowTokens} tokens${
      prompt !== undefined ? `; the request had ${prompt}` : ""
    }).`;
  }
  return failure;
}

function numberField(value: unknown): number | undefined {
  return typeof value === "number" && Number.isFinite(value) && value > 0 ? value : undefined;
}

function firstNumber(text: string, pattern: RegExp): number | undefined {
  const match = pattern.exec(text);
  return match?.[1] ? numberField(Number(match[1])) : undefined;
}

/** Words an HTTP error answer by status (context-exceeded bodies recognised first). Never throws. */
export function describeHttpFailure(
  err: HttpFailureInfo & { status: number },
  ctx: FailureContext,
): ProviderFailure {
  const { status } = err;
  if (status === 400 || status === 413 || status === 422 || status === 500) {
    const exceeded = contextExceeded(err);
    if (exceeded) return exceeded;
  }
  const where = displayBaseURL(ctx.baseURL);
  const rawDetail = providerDetail(err);
  const detail = rawDetail ? scrubProviderText(rawDetail, ctx.apiKey) : undefined;
  const withDetail = (text: string) => (detail ? `${text}: ${detail}` : `${text}.`);
  if (status === 401) {
    const hint = ctx.apiKeyHint ?? "OPENAI_API_KEY";
    return { kind: "auth", status, message: `The model provider rejected the API key (401). Check ${hint}.` };
  }
  if (status === 403) {
    return { kind: "forbidden", status, message: withDetail("The model provider refused access (403)") };
  }
  if (status === 404) {
    return {
      kind: "not-found",
      status,
      message: `Model "${ctx.model}" was not found at ${where} (404). Check the model name and base URL.`,
    };
  }
  if (status === 429) {
    const code = (err.body as { code?: unknown; type?: unknown } | undefined) ?? {};
    if (code.code === "insufficient_quota" || code.type === "insufficient_quota") {
      return {
        kind: "quota",
        status,
        message: "The model provider account has run out of quota (429). Check the plan and billing details.",
      };
    }
    const wait = retryAfterMs(err.headers);
    const failure: ProviderFailure = {
      kind: "rate-limited",
      status,
      message:
        wait === undefined
          ? "Rate limited by the model provider (429). Try again in a moment."
          : `Rate limited by the model provider (429); retry after ${formatDelay(wait)}.`,
    };
    if (wait !== undefined) failure.retryAfterMs = wait;
    return failure;
  }
  if (status >= 500) {
    const text =
      status === 502 || status === 503 || status === 504
        ? `The model server at ${where} is unavailable (${status}). Try again later.`
        : `The model server at ${where} had an internal error (${status}). Try again later.`;
    return { kind: "server", status, message: detail ? `${text} It said: ${detail}` : text };
  }
  return {
    kind: "bad-request",
    status,
    message: withDetail(`The model provider rejected the request (${status})`),
  };
}

/**
 * Words a failure that is not the provider client's own (its SDK's classes are the provider's
 * `describeError`): idle timeouts, transport errors after the response started (a cut-off stream, or a
 * malformed event), network errors before it ("could not reach"), anything else as "the model request
 * failed". Never throws; the message never contains the API key.
 */
export function describeProviderFailure(err: unknown, ctx: FailureContext): ProviderFailure {
  const where = displayBaseURL(ctx.baseURL);
  if (err instanceof StreamIdleTimeoutError) {
    return {
      kind: "idle-timeout",
      message: `No data from the model server at ${where} for ${formatLimit(err.idleMs)}; the answer was abandoned.`,
    };
  }
  if (ctx.streamStarted) {
    if (err instanceof SyntaxError) {
      return { kind: "stream-error", message: "The model server sent a malformed stream event." };
    }
    return { kind: "cut-off", message: CUT_OFF_MESSAGE };
  }
  if (networkReason(err)) return unreachable(err, where, ctx);
  const text = err instanceof Error ? err.message : String(err);
  return { kind: "unknown", message: `The model request failed: ${scrubProviderText(text, ctx.apiKey)}` };
}

/** A mid-stream error event: a context-exceeded one is recognised, any other quoted. Never throws. */
export function describeStreamErrorEvent(err: HttpFailureInfo, ctx: FailureContext): ProviderFailure {
  const exceeded = contextExceeded(err);
  if (exceeded) return exceeded;
  const detail = providerDetail(err);
  return {
    kind: "stream-error",
    message: detail
      ? `The model provider reported an error mid-answer: ${scrubProviderText(detail, ctx.apiKey)}`
      : "The model provider reported an error mid-answer.",
  };
}

/**
 * A human sentence for a `finish_reason` that means the answer did not complete normally
 * (`content_filter` or a value this adapter does not know).
 */
export function describeFinishReason(reason: string): string {
  if (reason === "content_filter") {
    return "The model provider's content filter stopped the answer (finish_reason: content_filter).";
  }
  return `The model provider ended the answer with an unexpected finish_reason "${reason}".`;
}
