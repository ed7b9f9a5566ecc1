import { Agent, type Dispatcher, fetch as undiciFetch } from "undici";
import { abortError, NodeResponse, requestHeaders } from "./node-http-fetch.js";
import type { ProviderFetch } from "./providers.js";

/** Options of {@link createHttpFetch}. */
export interface HttpFetchOptions {
  /** The undici dispatcher requests go through (e.g. a `ProxyAgent`). Default: a private keep-alive `Agent`. */
  dispatcher?: Dispatcher;
  /** How long an idle pooled connection is kept when the server sends no `Keep-Alive` hint. Default 4 000 ms. */
  keepAliveTimeoutMs?: number;
}

/** A `fetch` for a provider's client (the `openai` SDK) plus the connection pool it owns. */
export interface HttpFetch extends ProviderFetch {
  /** Closes the pooled connections of a private dispatcher (call at shutdown). Idempotent. */
  destroy(): void;
}

/** Statuses `fetch` follows (`redirect: "follow"`); a direct request hands them to `fetch`. */
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/**
 * The SDK's `fetch`, over an undici `Agent`. The agent pools connections, honours the server's
 * `Keep-Alive: timeout=…` hint and drops a pooled socket the server has closed before reusing it, so a
 * server that closes after every streamed response while advertising keep-alive (llama.cpp's
 * `llama-server`) costs no failed request.
 *
 * A request with a string or byte body (every chat-completions call) goes through undici's
 * `dispatcher.request` instead of its WHATWG `fetch`: no `Request`/`Headers`/web-stream objects per
 * request and no web-stream hop per body chunk, which is most of the client's CPU when hundreds of answers
 * stream at once (`npm run bench:llm`, `bench:runs`). The response is the subset of `Response` the SDK
 * reads (see {@link NodeResponse}); its body yields each buffer as it arrives. Bodies are not decompressed
 * (`Accept-Encoding` is not sent on that path), redirects and anything else are handed to undici's
 * `fetch`. Aborts reject (or end the body) with an `AbortError`, as `fetch` does.
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
    if (REDIRECTS.has(data.statusCode) && typeof location === "string") {
      data.body.on("error", () => {}).destroy();
      return viaFetch(new URL(location, url).href, redirectedInit(data.statusCode, init));
    }
    const head = { status: data.statusCode, statusText: data.statusText ?? "", headers: data.headers };
    return new NodeResponse(head, data.body, url.href) as unknown as Response;
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
