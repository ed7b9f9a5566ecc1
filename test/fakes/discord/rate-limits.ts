import { createHash } from "node:crypto";

/** A per-route limit: `limit` requests per `windowMs` per major parameter (channel). */
export interface RouteLimit {
  limit: number;
  windowMs: number;
}

/** The fake's per-route limits, keyed by `METHOD template`; close to what Discord reports for bots. */
export const DEFAULT_ROUTE_LIMITS: Record<string, RouteLimit> = {
  "POST /channels/:c/messages": { limit: 5, windowMs: 5000 },
  "PATCH /channels/:c/messages/:m": { limit: 5, windowMs: 5000 },
  "DELETE /channels/:c/messages/:m": { limit: 5, windowMs: 1000 },
  "reactions /channels/:c/messages/:m/reactions/:e/@me": { limit: 1, windowMs: 250 },
  "POST /channels/:c/typing": { limit: 5, windowMs: 5000 },
  "POST /channels/:c/messages/:m/threads": { limit: 5, windowMs: 5000 },
};

const DEFAULT_LIMIT: RouteLimit = { limit: 50, windowMs: 1000 };

/** What the limiter says about one request. */
export type RateDecision =
  | { kind: "ok"; headers: Record<string, string> }
  | { kind: "limited"; retryAfterMs: number; global: boolean; headers: Record<string, string> };

interface Window {
  resetAt: number;
  used: number;
}

/** An injected 429 for the next requests matching a method and path pattern. */
interface Injected {
  method: string;
  path: RegExp;
  remaining: number;
  retryAfterMs: number;
}

/**
 * Discord's REST rate limits as the fake enforces them: fixed windows per route bucket and major
 * parameter (with the `X-RateLimit-*` headers @discordjs/rest follows), the bot's global limit per
 * wall-clock second (interaction endpoints exempt), and 429s injected by tests.
 */
export class FakeRateLimits {
  private readonly windows = new Map<string, Window>();
  private readonly injected: Injected[] = [];
  private globalSecond = 0;
  private globalUsed = 0;

  constructor(
    private readonly globalLimit: number,
    private readonly routes: Record<string, RouteLimit> = DEFAULT_ROUTE_LIMITS,
  ) {}

  /** Makes the next `count` requests matching `method` and `path` answer 429 with `retryAfterMs`. */
  inject(method: string, path: RegExp, retryAfterMs: number, count = 1): void {
    this.injected.push({ method: method.toUpperCase(), path, remaining: count, retryAfterMs });
  }

  /** Decides one request; `exempt` requests (interactions) skip the global limit. */
  check(method: string, path: string, template: string, major: string, exempt: boolean): RateDecision {
    const now = Date.now();
    const injected = this.injected.find(
      (entry) => entry.method === method && entry.path.test(path) && entry.remaining > 0,
    );
    const key =
      method === "PUT" || (method === "DELETE" && template.includes("/reactions/")) ? "reactions" : method;
    const bucketName = `${key} ${template}`;
    const route = this.routes[bucketName] ?? DEFAULT_LIMIT;
    const id = `${bucketName}:${major}`;
    let window = this.windows.get(id);
    if (!window || window.resetAt <= now) {
      window = { resetAt: now + route.windowMs, used: 0 };
      this.windows.set(id, window);
    }
    const headers = (remaining: number) => ({
      "X-RateLimit-Limit": String(route.limit),
      "X-RateLimit-Remaining": String(Math.max(0, remaining)),
      "X-RateLimit-Reset": String(window.resetAt / 1000),
      "X-RateLimit-Reset-After": String(Math.max(0, window.resetAt - now) / 1000),
      "X-RateLimit-Bucket": createHash("sha1").update(bucketName).digest("hex").slice(0, 16),
    });
    if (injected) {
      injected.remaining--;
      return {
        kind: "limited",
        retryAfterMs: injected.retryAfterMs,
        global: false,
        headers: headers(route.limit - window.used),
      };
    }
    if (!exempt) {
      const second = Math.floor(now / 1000);
      if (second !== this.globalSecond) {
        this.globalSecond = second;
        this.globalUsed = 0;
      }
      if (this.globalUsed >= this.globalLimit) {
        return {
          kind: "limited",
          retryAfterMs: (second + 1) * 1000 - now,
          global: true,
          headers: { "X-RateLimit-Global": "true", "X-RateLimit-Scope": "global" },
        };
      }
    }
    if (window.used >= route.limit) {
      return { kind: "limited", retryAfterMs: window.resetAt - now, global: false, headers: headers(0) };
    }
    window.used++;
    if (!exempt) this.globalUsed++;
    return { kind: "ok", headers: headers(route.limit - window.used) };
  }
}
