import { Agent, type Dispatcher, fetch as undiciFetch } from "undici";
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

/**
 * The SDK's `fetch`: undici's (the implementation Node's global `fetch` is built on, pinned here) over an
 * undici `Agent`. The agent pools connections, honours the server's `Keep-Alive: timeout=…` hint and
 * drops a pooled socket the server has closed before reusing it, so a server that closes after every
 * streamed response while advertising keep-alive (llama.cpp's `llama-server`) costs no failed request.
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
  const fetchImpl = (input: string | URL | Request, init?: RequestInit): Promise<Response> =>
    undiciFetch(input as Parameters<typeof undiciFetch>[0], {
      ...(init as Parameters<typeof undiciFetch>[1]),
      dispatcher,
    }) as unknown as Promise<Response>;
  let destroyed = false;
  return Object.assign(fetchImpl, {
    destroy: () => {
      if (destroyed || !owned) return;
      destroyed = true;
      void owned.close().catch(() => {});
    },
  });
}
