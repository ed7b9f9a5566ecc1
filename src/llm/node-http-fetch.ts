import http, { type IncomingHttpHeaders, type IncomingMessage } from "node:http";
import https from "node:https";
import type { Readable } from "node:stream";
import type { ProviderFetch } from "./providers.js";

/** Options of {@link createNodeHttpFetch}. */
export interface NodeHttpFetchOptions {
  /** Agent for `http:` URLs. Default: a keep-alive agent owned by this fetch. */
  httpAgent?: http.Agent;
  /** Agent for `https:` URLs. Default: a keep-alive agent owned by this fetch. */
  httpsAgent?: https.Agent;
}

/** A `fetch` for the `openai` SDK plus the agents it pools connections in. */
export interface NodeHttpFetch extends ProviderFetch {
  /** Closes idle pooled connections (call at shutdown). */
  destroy(): void;
}

/** The `AbortError` a `fetch` rejects with when `signal` aborts (its reason, when that is one). */
export function abortError(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  if (reason instanceof Error && reason.name === "AbortError") return reason;
  const error = new Error("This operation was aborted", { cause: reason });
  error.name = "AbortError";
  return error;
}

/** Read-only response headers over Node's (or undici's) already-lowercased header object. */
export class NodeHeaders {
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
 * A response body that yields each buffer as Node's HTTP parser delivers it (one chunked-encoding frame,
 * usually one SSE event). The stream's own async iterator would concatenate everything buffered into
 * one large buffer, which the SDK's SSE splitter then copies once per event.
 */
class NodeBody implements AsyncIterable<Buffer> {
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
 * The subset of `Response` the `openai` SDK reads. `body` is an async iterable over the Node stream: the
 * SDK iterates any async-iterable body, so the SSE bytes reach it without a web-stream conversion.
 */
export class NodeResponse {
  readonly status: number;
  readonly statusText: string;
  readonly ok: boolean;
  readonly headers: NodeHeaders;
  readonly body: NodeBody;
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
    this.headers = new NodeHeaders(head.headers);
    this.body = new NodeBody(body);
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

/** A request's headers as a plain object (from a `Headers`, pairs or a record). */
export function requestHeaders(init: RequestInit | undefined): Record<string, string> {
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

/**
 * A `fetch` for the `openai` SDK built on `node:http`/`node:https` with keep-alive agents. It costs less
 * CPU per request and per streamed chunk than Node's global `fetch` (see `npm run bench:llm`). Bodies
 * that are not a string or bytes (uploads) are handed to the global `fetch`. Aborts reject (or end the
 * body) with an `AbortError`, as `fetch` does. Responses are not full `Response` objects: use this
 * only as the SDK's `fetch`.
 */
export function createNodeHttpFetch(options: NodeHttpFetchOptions = {}): NodeHttpFetch {
  // Idle pooled sockets close after 4 s (or the server's Keep-Alive hint), as undici's fetch does.
  const agentOptions = { keepAlive: true, scheduling: "lifo" as const, timeout: 4_000 };
  const httpAgent = options.httpAgent ?? new http.Agent(agentOptions);
  const httpsAgent = options.httpsAgent ?? new https.Agent(agentOptions);

  const fetchImpl = (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const body = init?.body;
    if (typeof input === "object" && !(input instanceof URL)) return fetch(input, init);
    if (body != null && typeof body !== "string" && !(body instanceof Uint8Array)) return fetch(input, init);
    const url = typeof input === "string" ? new URL(input) : input;
    const signal = init?.signal ?? undefined;
    if (signal?.aborted) return Promise.reject(abortError(signal));
    const secure = url.protocol === "https:";
    return new Promise<Response>((resolve, reject) => {
      const request = (secure ? https : http).request(url, {
        method: init?.method ?? "GET",
        headers: requestHeaders(init),
        agent: secure ? httpsAgent : httpAgent,
      });
      let response: IncomingMessage | undefined;
      const onAbort = () => {
        const error = abortError(signal as AbortSignal);
        if (response) response.destroy(error);
        request.destroy(error);
        reject(error);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      const cleanup = () => signal?.removeEventListener("abort", onAbort);
      request.on("error", (error) => {
        cleanup();
        reject(error);
      });
      request.on("response", (res) => {
        response = res;
        res.on("close", cleanup);
        const head = {
          status: res.statusCode ?? 0,
          statusText: res.statusMessage ?? "",
          headers: res.headers,
        };
        resolve(new NodeResponse(head, res, url.href) as unknown as Response);
      });
      request.end(body ?? undefined);
    });
  };

  return Object.assign(fetchImpl, {
    destroy: () => {
      httpAgent.destroy();
      httpsAgent.destroy();
    },
  });
}
