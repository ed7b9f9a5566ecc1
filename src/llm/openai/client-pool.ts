import OpenAI, { type ClientOptions } from "openai";

/** A `fetch` implementation the SDK can use. */
export type OpenAIFetch = NonNullable<ClientOptions["fetch"]>;

/** Settings shared by every client of a pool. */
export interface OpenAIClientPoolOptions {
  /** Headers on every request (per-model and per-request headers are added on top). */
  defaultHeaders?: Record<string, string>;
  /** A custom `fetch` (the provider passes `createHttpFetch()`, an undici keep-alive agent). Default: the global `fetch`. */
  fetch?: OpenAIFetch;
  /** `OpenAI-Organization` header. Default: none (the SDK's `OPENAI_ORG_ID` lookup is disabled). */
  organization?: string;
  /** `OpenAI-Project` header. Default: none (the SDK's `OPENAI_PROJECT_ID` lookup is disabled). */
  project?: string;
}

/**
 * One `OpenAI` client per base URL, created on first use and reused for every request after, so
 * connections stay pooled (keep-alive). The API key is not part of a client: it travels per request as
 * an `Authorization` header (see {@link authHeaders}), so many keys share one client.
 */
export class OpenAIClientPool {
  private readonly clients = new Map<string, OpenAI>();

  constructor(private readonly options: OpenAIClientPoolOptions = {}) {}

  /** The client for `baseURL` (created once). */
  get(baseURL: string): OpenAI {
    let client = this.clients.get(baseURL);
    if (!client) {
      const init: ClientOptions = {
        baseURL,
        // Never used: every request sets its own Authorization header.
        apiKey: "per-request",
        organization: this.options.organization ?? null,
        project: this.options.project ?? null,
        maxRetries: 2,
      };
      if (this.options.defaultHeaders) init.defaultHeaders = this.options.defaultHeaders;
      if (this.options.fetch) init.fetch = this.options.fetch;
      client = new OpenAI(init);
      this.clients.set(baseURL, client);
    }
    return client;
  }

  /** How many clients exist (one per base URL used so far). */
  get size(): number {
    return this.clients.size;
  }
}

/** The per-request auth header: `Bearer <key>`, or a removal of the header when there is no key. */
export function authHeaders(apiKey: string | undefined): Record<string, string | null> {
  return { Authorization: apiKey ? `Bearer ${apiKey}` : null };
}
