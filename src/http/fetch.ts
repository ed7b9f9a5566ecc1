import type { IncomingHttpHeaders } from "node:http";
import type { Readable } from "node:stream";
import { Agent, type Dispatcher, FormData as UndiciFormData, fetch as undiciFetch } from "undici";

/** Options of {@link createHttpFetch}. */
export interface HttpFetchOptions {
  /**
   * The undici dispatcher requests go through: a `ProxyAgent`, or an `Agent` with TLS options
   * (`new Agent({ connect: { ca } })`). Default: a private keep-alive `Agent`.
   */
  dispatcher?: Dispatcher;
  /** How long an idle pooled connection is kept when the server sends no `Keep-Alive` hint. Default 4 000 ms. */
  keepAliveTimeoutMs?: number;
}

/** A `fetch` of the global `fetch`'s shape, which the SDKs' clients take. */
export type FetchFunction = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/** A `fetch` for an SDK's client (the `openai` SDK, Slack's `WebClient`) plus the connection pool it owns. */
export interface HttpFetch extends FetchFunction {
  /** Closes the pooled connections of a private dispatcher (call at shutdown). Idempotent. */
  destroy(): void;
}

/** Statuses `fetch` follows (`redirect: "follow"`); a direct request hands them to `fetch`. */
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/**
 * The `fetch` of the model client and of Slack's Web API client, over an undici `Agent`. The agent pools
 * connections, honours the server's `Keep-Alive: timeout=…` hint and drops a pooled socket the server has
 * closed before reusing it, so a server that closes after every streamed response while advertising
 * keep-alive (llama.cpp's `llama-server`) costs no failed request.
 *
 * A request with a string or byte body (every chat-completions call, every form-encoded Web API call)
 * goes through undici's `dispatcher.request` instead of its WHATWG `fetch`: no `Request`/`Headers`/
 * web-stream objects per request and no web-stream hop per body chunk, which is most of the client's CPU
 * when hundreds of answers stream at once (`npm run bench:llm`, `bench:runs`). The response is the subset
 * of `Response` the SDKs read (see {@link LeanResponse}); its body yields each buffer as it arrives.
 * Bodies are not decompressed (`Accept-Encoding` is not sent on that path). A redirect is followed through
 * undici's `fetch`, rejected under `redirect: "error"` (Slack's client) and returned under `"manual"`;
 * other bodies (`FormData` uploads, streams) go through undici's `fetch` from the start. Aborts reject (or
 * end the body) with an `AbortError`, as `fetch` does. Responses are not full `Response` objects: use
 * this only as an SDK's `fetch`.
 */
export function createHttpFetch(options: HttpFetchOptions = {}): HttpFetch {
  const owned = options.dispatcher
    ? undefined
    : new Agent({
        keepAliveTimeout: options.keepAliveTimeoutMs ?? 4_000,
        keepAliveMaxTimeout: 600_000,
        // SSE answers can pause for minutes; the stream function's idle timeout decides, not the socket.
        bodyTimeout: 0,
        headersTimeout: 0,
      });
  const dispatcher = options.dispatcher ?? (owned as Agent);
  const viaFetch = (input: string | URL | Request, init?: RequestInit): Promise<Response> =>
    undiciFetch(input as Parameters<typeof undiciFetch>[0], {
      ...(init as Parameters<typeof undiciFetch>[1]),
      ...(init?.body instanceof FormData ? { body: undiciFormData(init.body) } : {}),
      dispatcher,
    }) as unknown as Promise<Response>;
  const fetchImpl = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const body = init?.body;
    if (typeof input === "object" && !(input instanceof URL)) return viaFetch(input, init);
    if (body != null && typeof body !== "string" && !(body instanceof Uint8Array))
      return viaFetch(input, init);
    const signal = init?.signal ?? undefined;
    if (signal?.aborted) throw abortError(signal);
    const url = typeof input === "string" ? new URL(input) : input;
    const headers = requestHeaders(init);
    for (const name of Object.keys(headers)) {
      if (name.toLowerCase() === "accept-encoding") delete headers[name];
    }
    let data: Dispatcher.ResponseData;
    try {
      data = await dispatcher.request({
        origin: url.origin,
        path: `${url.pathname}${url.search}`,
        method: (init?.method ?? "GET") as Dispatcher.HttpMethod,
        headers,
        body: body ?? null,
        ...(signal ? { signal } : {}),
      });
    } catch (err) {
      if (signal?.aborted) throw abortError(signal);
      // Headers undici's request refuses (e.g. a custom `Connection` value): fetch takes them.
      if ((err as { code?: unknown }).code === "UND_ERR_INVALID_ARG") return viaFetch(input, init);
      throw err;
    }
    const location = data.headers.location;
    const redirect = init?.redirect ?? "follow";
    if (REDIRECTS.has(data.statusCode) && typeof location === "string" && redirect !== "manual") {
      data.body.on("error", () => {}).destroy();
      // As undici's fetch does: under `redirect: "error"` a redirect is a network error.
      if (redirect === "error")
        throw new TypeError("fetch failed", { cause: new Error("unexpected redirect") });
      return viaFetch(new URL(location, url).href, redirectedInit(data.statusCode, init));
    }
    const head = { status: data.statusCode, statusText: data.statusText ?? "", headers: data.headers };
    return new LeanResponse(head, data.body, url.href) as unknown as Response;
  };
  let destroyed = false;
  return Object.assign(fetchImpl, {
    destroy: () => {
      if (destroyed || !owned) return;
      destroyed = true;
      void owned.close().catch(() => {});
    },
  });
}

/** The request a redirect asks for (https://fetch.spec.whatwg.org/#http-redirect-fetch, step 12). */
function redirectedInit(status: number, init: RequestInit | undefined): RequestInit | undefined {
  const method = (init?.method ?? "GET").toUpperCase();
  const toGet =
    ((status === 301 || status === 302) && method === "POST") ||
    (status === 303 && method !== "GET" && method !== "HEAD");
  if (!toGet) return init;
  const { body: _body, ...rest } = init ?? {};
  return { ...rest, method: "GET" };
}

/**
 * A `FormData` of Node's global `fetch` (Slack's client builds one for uploads) as undici's own: undici's
 * `fetch` does not recognise the other class and would send `[object FormData]` as text.
 */
function undiciFormData(body: FormData): UndiciFormData {
  if ((body as unknown) instanceof UndiciFormData) return body as unknown as UndiciFormData;
  const form = new UndiciFormData();
  for (const [name, value] of body) {
    if (typeof value === "string") form.append(name, value);
    else form.append(name, value, value.name);
  }
  return form;
}

/** The `AbortError` a `fetch` rejects with when `signal` aborts (its reason, when that is one). */
function abortError(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  if (reason instanceof Error && reason.name === "AbortError") return reason;
  const error = new Error("This operation was aborted", { cause: reason });
  error.name = "AbortError";
  return error;
}

/** A request's headers as a plain object (from a `Headers`, pairs or a record). */
function requestHeaders(init: RequestInit | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  const headers = init?.headers;
  if (!headers) return out;
  if (headers instanceof Headers || Array.isArray(headers)) {
    for (const [name, value] of headers as Iterable<[string, string]>) out[name] = value;
  } else {
    for (const [name, value] of Object.entries(headers)) if (value !== undefined) out[name] = String(value);
  }
  return out;
}

/** Read-only response headers over undici's already-lowercased header object. */
class LeanHeaders {
  constructor(private readonly raw: IncomingHttpHeaders) {}
  get(name: string): string | null {
    const value = this.raw[name.toLowerCase()];
    if (value === undefined) return null;
    return Array.isArray(value) ? value.join(", ") : value;
  }
  has(name: string): boolean {
    return this.raw[name.toLowerCase()] !== undefined;
  }
  *entries(): IterableIterator<[string, string]> {
    for (const name of Object.keys(this.raw)) yield [name, this.get(name) ?? ""];
  }
  *keys(): IterableIterator<string> {
    yield* Object.keys(this.raw);
  }
  *values(): IterableIterator<string> {
    for (const [, value] of this.entries()) yield value;
  }
  forEach(callback: (value: string, name: string) => void): void {
    for (const [name, value] of this.entries()) callback(value, name);
  }
  [Symbol.iterator](): IterableIterator<[string, string]> {
    return this.entries();
  }
}

/**
 * A response body that yields each buffer as the HTTP parser delivers it (one chunked-encoding frame,
 * usually one SSE event). The stream's own async iterator would concatenate everything buffered into
 * one large buffer, which the SDK's SSE splitter then copies once per event.
 */
class LeanBody implements AsyncIterable<Buffer> {
  private readonly queue: Buffer[] = [];
  private head = 0;
  private ended = false;
  private failure: unknown;
  private waiter: (() => void) | undefined;

  constructor(private readonly res: Readable) {
    res.on("data", (part: Buffer) => {
      this.queue.push(part);
      if (this.queue.length - this.head >= 64) res.pause();
      this.wake();
    });
    res.on("end", () => {
      this.ended = true;
      this.wake();
    });
    res.on("error", (error) => {
      this.failure = error;
      this.wake();
    });
    res.on("close", () => {
      // A connection lost before `end` is a failure even when no `error` was emitted.
      if (!this.ended && this.failure === undefined) this.failure = prematureClose();
      this.wake();
    });
  }

  private wake(): void {
    const waiter = this.waiter;
    this.waiter = undefined;
    waiter?.();
  }

  private async next(): Promise<IteratorResult<Buffer>> {
    for (;;) {
      if (this.head < this.queue.length) {
        const value = this.queue[this.head] as Buffer;
        this.queue[this.head++] = undefined as unknown as Buffer;
        if (this.head === this.queue.length) {
          this.queue.length = 0;
          this.head = 0;
          if (this.res.isPaused()) this.res.resume();
        }
        return { value, done: false };
      }
      if (this.failure !== undefined) throw this.failure;
      if (this.ended) return { value: undefined, done: true };
      await new Promise<void>((resolve) => {
        this.waiter = resolve;
      });
    }
  }

  [Symbol.asyncIterator](): AsyncIterator<Buffer> {
    return {
      next: () => this.next(),
      return: async () => {
        if (!this.ended) this.res.destroy();
        return { value: undefined, done: true };
      },
    };
  }
}

function prematureClose(): Error {
  const error = new Error("The connection closed before the response ended") as Error & { code: string };
  error.code = "ECONNRESET";
  return error;
}

/**
 * The subset of `Response` the SDKs read. `body` is an async iterable over the undici stream: the `openai`
 * SDK iterates any async-iterable body, so the SSE bytes reach it without a web-stream conversion.
 */
class LeanResponse {
  readonly status: number;
  readonly statusText: string;
  readonly ok: boolean;
  readonly headers: LeanHeaders;
  readonly body: LeanBody;
  readonly redirected = false;
  readonly type = "basic";
  bodyUsed = false;

  constructor(
    head: { status: number; statusText: string; headers: IncomingHttpHeaders },
    body: Readable,
    readonly url: string,
  ) {
    this.status = head.status;
    this.statusText = head.statusText;
    this.ok = this.status >= 200 && this.status < 300;
    this.headers = new LeanHeaders(head.headers);
    this.body = new LeanBody(body);
  }

  async arrayBuffer(): Promise<ArrayBuffer> {
    this.bodyUsed = true;
    const parts: Buffer[] = [];
    for await (const part of this.body) parts.push(part);
    const buffer = Buffer.concat(parts);
    return buffer.buffer.slice(buffer.byteOffset, buffer.byteOffset + buffer.byteLength) as ArrayBuffer;
  }

  async text(): Promise<string> {
    return Buffer.from(await this.arrayBuffer()).toString("utf8");
  }

  async json(): Promise<unknown> {
    return JSON.parse(await this.text());
  }
}
