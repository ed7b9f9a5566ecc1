import type { IncomingMessage, ServerResponse } from "node:http";
import type { FakeRateLimits } from "./rate-limits.js";

/** One REST request as the fake received and answered it. */
export interface RecordedRequest {
  seq: number;
  method: string;
  /** Path without `/api/v10`, e.g. `/channels/123/messages`. */
  path: string;
  /** The route with ids replaced, e.g. `/channels/:c/messages`. */
  template: string;
  body: unknown;
  status: number;
  /** Discord error code of a failed request. */
  code?: number;
  /** `Date.now()` when the request arrived. */
  at: number;
  /** `performance.now()` when the request arrived (for benchmarks). */
  hrAt: number;
}

/** A REST answer: status, JSON body (none for 204) and extra headers. */
export interface RestReply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

/** A route handler: path parameters in order, the parsed body, the query. */
export type RouteHandler = (
  params: string[],
  body: Record<string, unknown>,
  query: URLSearchParams,
) => RestReply;

interface Route {
  method: string;
  template: string;
  pattern: RegExp;
  handler: RouteHandler;
  /** Interaction endpoints: no bot token, not in the global limit. */
  interaction: boolean;
}

/** `{ code, message }` in Discord's error shape. */
export function discordError(status: number, code: number, message: string, errors?: unknown): RestReply {
  return { status, body: errors === undefined ? { code, message } : { code, message, errors } };
}

/**
 * Discord's REST API v10 under `/api/v10`: bot-token authentication, routing by method and path
 * template, rate limits (429 with `Retry-After` and the JSON `retry_after`), and a log of every request.
 */
export class FakeRest {
  readonly requests: RecordedRequest[] = [];
  private readonly routes: Route[] = [];
  private readonly holds: { method: string; path: RegExp; arrived: () => void; released: Promise<void> }[] =
    [];

  constructor(
    private readonly token: string,
    private readonly limits: FakeRateLimits,
    private readonly onChange: () => void,
  ) {}

  /** Registers a route; `template` uses `:name` for path parameters (`/channels/:c/messages/:m`). */
  route(method: string, template: string, handler: RouteHandler): void {
    const pattern = new RegExp(`^${template.replace(/:[a-z]+/g, "([^/]+)")}$`);
    const interaction = template.startsWith("/interactions/") || template.startsWith("/webhooks/");
    this.routes.push({ method, template, pattern, handler, interaction });
  }

  /**
   * The next `method` request whose path (without `/api/v10`) matches `path` is answered only once the test
   * calls `release` (a slow Discord); `arrived` resolves when it came in.
   */
  holdNext(method: string, path: RegExp): { arrived: Promise<void>; release: () => void } {
    let arrived!: () => void;
    let release!: () => void;
    const arrival = new Promise<void>((resolve) => {
      arrived = resolve;
    });
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    this.holds.push({ method, path, arrived, released });
    return { arrived: arrival, release };
  }

  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const hrAt = performance.now();
    const at = Date.now();
    const raw = await new Promise<string>((resolve) => {
      let data = "";
      req.setEncoding("utf8");
      req.on("data", (chunk: string) => {
        data += chunk;
      });
      req.on("end", () => resolve(data));
    });
    const url = new URL(req.url ?? "/", "http://fake");
    const method = (req.method ?? "GET").toUpperCase();
    const path = url.pathname.replace(/^\/api(\/v\d+)?/, "");
    let body: Record<string, unknown> = {};
    try {
      body = raw === "" ? {} : (JSON.parse(raw) as Record<string, unknown>);
    } catch {
      body = {};
    }
    const record: RecordedRequest = {
      seq: this.requests.length + 1,
      method,
      path,
      template: path,
      body,
      status: 0,
      at,
      hrAt,
    };
    this.requests.push(record);
    const held = this.holds.findIndex((hold) => hold.method === method && hold.path.test(path));
    if (held >= 0) {
      const [hold] = this.holds.splice(held, 1);
      hold!.arrived();
      await hold!.released;
    }
    const reply = this.answer(method, path, req.headers.authorization, body, url.searchParams, record);
    record.status = reply.status;
    const code = (reply.body as { code?: unknown } | undefined)?.code;
    if (typeof code === "number") record.code = code;
    res.writeHead(reply.status, {
      ...(reply.body === undefined ? {} : { "Content-Type": "application/json" }),
      ...reply.headers,
    });
    res.end(reply.body === undefined ? undefined : JSON.stringify(reply.body));
    this.onChange();
  }

  private answer(
    method: string,
    path: string,
    authorization: string | undefined,
    body: Record<string, unknown>,
    query: URLSearchParams,
    record: RecordedRequest,
  ): RestReply {
    let params: string[] | undefined;
    const route = this.routes.find((candidate) => {
      if (candidate.method !== method) return false;
      const match = candidate.pattern.exec(path);
      if (match) params = match.slice(1).map(decodeURIComponent);
      return match !== null;
    });
    if (!route || !params) return discordError(404, 0, `404: Not Found (${method} ${path})`);
    record.template = route.template;
    if (!route.interaction && authorization !== `Bot ${this.token}`)
      return discordError(401, 0, "401: Unauthorized");
    const major = /^\/(?:channels|guilds)\/(\d+)/.exec(path)?.[1] ?? "global";
    const decision = this.limits.check(method, path, route.template, major, route.interaction);
    if (decision.kind === "limited") {
      const seconds = decision.retryAfterMs / 1000;
      return {
        status: 429,
        body: {
          message: "You are being rate limited.",
          retry_after: seconds,
          global: decision.global,
          code: 0,
        },
        headers: {
          ...decision.headers,
          "Retry-After": String(seconds),
          ...(decision.global ? {} : { "X-RateLimit-Scope": "user" }),
        },
      };
    }
    const reply = route.handler(params, body, query);
    return { ...reply, headers: { ...decision.headers, ...reply.headers } };
  }
}
