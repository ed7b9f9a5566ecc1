import type { Cluster, Redis } from "ioredis";
import type { ChatUser, ThreadRef } from "../chat/index.js";
import { type SpendScope, spendKey } from "./keys.js";

/** A daily budget: tokens (input + output, cached included) and/or US dollars. Unset = unlimited. */
export interface SpendCap {
  tokens?: number;
  usd?: number;
}

/**
 * Daily budgets (UTC days) per thread, per user (the run's requester), per channel and per workspace/guild,
 * enforced across all workers. Unset scopes are unlimited.
 */
export type SpendCaps = Partial<Record<SpendScope, SpendCap>>;

/** The order caps are checked and named in. */
export const SPEND_SCOPES: readonly SpendScope[] = ["thread", "user", "channel", "workspace"];

/** What one scope has used today. */
export interface SpendTotals {
  tokens: number;
  usd: number;
  requests: number;
}

/** Who a run spends for. */
export interface SpendTarget {
  threadId: string;
  thread: ThreadRef;
  requester: ChatUser;
}

/** A cap that is used up: which one, what was used, and when it resets. */
export interface CapReached {
  scope: SpendScope;
  unit: "tokens" | "usd";
  limit: number;
  used: number;
  /** Epoch ms of the next UTC midnight. */
  resetsAt: number;
}

/** How long a request's reservation holds a counter before it counts as abandoned (a crashed worker). */
export const RESERVATION_MS = 5 * 60_000;
/** How long a day's counters are kept for reporting. */
export const SPEND_RETENTION_MS = 35 * 24 * 60 * 60_000;
/** How often a request that waits for in-flight ones near a cap looks again. */
const WAIT_POLL_MS = 200;

/**
 * admit → {'ok'} | {'over', unit, used} | {'wait'}. Refuses when the day's use has reached a cap; asks the
 * caller to wait when use plus other requests' reservations has (so near a cap requests go one at a time and
 * the cap is passed by at most one request's worth); else reserves this key's average request.
 */
const ADMIT_LUA = `
local key, id, now = KEYS[1], ARGV[1], tonumber(ARGV[2])
local capT, capU = tonumber(ARGV[3]), tonumber(ARGV[4])
local tokens, usd, requests, resT, resU = 0, 0, 0, 0, 0
local h = redis.call('HGETALL', key)
for i = 1, #h, 2 do
  local f, v = h[i], h[i + 1]
  if f == 'tokens' then tokens = tonumber(v)
  elseif f == 'usd' then usd = tonumber(v)
  elseif f == 'requests' then requests = tonumber(v)
  elseif string.sub(f, 1, 2) == 'r:' and f ~= 'r:' .. id then
    local exp, rt, ru = string.match(v, '^([^|]+)|([^|]+)|([^|]+)$')
    if not exp or tonumber(exp) < now then redis.call('HDEL', key, f)
    else resT = resT + tonumber(rt); resU = resU + tonumber(ru) end
  end
end
if capT and tokens >= capT then return {'over', 'tokens', tostring(tokens)} end
if capU and usd >= capU then return {'over', 'usd', tostring(usd)} end
if (capT and resT > 0 and tokens + resT >= capT) or (capU and resU > 0 and usd + resU >= capU) then
  return {'wait'}
end
local estT, estU = 0, 0
if requests > 0 then estT = math.ceil(tokens / requests); estU = usd / requests end
redis.call('HSET', key, 'r:' .. id, (now + tonumber(ARGV[5])) .. '|' .. estT .. '|' .. estU)
redis.call('PEXPIRE', key, ARGV[6])
return {'ok'}
`;

/** settle → {tokens, usd}: drops the reservation, adds what the request used, returns the day's totals. */
const SETTLE_LUA = `
local key = KEYS[1]
redis.call('HDEL', key, 'r:' .. ARGV[1])
local tokens = redis.call('HINCRBY', key, 'tokens', ARGV[2])
local usd = redis.call('HINCRBYFLOAT', key, 'usd', ARGV[3])
redis.call('HINCRBY', key, 'requests', 1)
redis.call('PEXPIRE', key, ARGV[4])
return {tostring(tokens), tostring(usd)}
`;

/** release → 1: drops a reservation whose request never ran (refused by another scope, failed to start). */
const RELEASE_LUA = `return redis.call('HDEL', KEYS[1], 'r:' .. ARGV[1])`;

type SpendRedis = Redis | Cluster;
type Commands = {
  tlSpendAdmit(key: string, ...args: (string | number)[]): Promise<string[]>;
  tlSpendSettle(key: string, ...args: (string | number)[]): Promise<[string, string]>;
  tlSpendRelease(key: string, id: string): Promise<number>;
};
const defined = new WeakSet<SpendRedis>();

/** The UTC day of `now` as `YYYY-MM-DD`. */
export function utcDay(now: number): string {
  return new Date(now).toISOString().slice(0, 10);
}

/** Epoch ms of the UTC midnight after `now`. */
export function nextUtcMidnight(now: number): number {
  const d = new Date(now);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1);
}

/** The id a scope's counter is kept under, for a run's thread and requester. */
export function scopeId(scope: SpendScope, target: SpendTarget): string {
  const { platform, workspace, channel } = target.thread;
  switch (scope) {
    case "thread":
      return target.threadId;
    case "user":
      return `${platform}:${workspace}:${target.requester.id}`;
    case "channel":
      return `${platform}:${workspace}:${channel}`;
    case "workspace":
      return `${platform}:${workspace}`;
  }
}

/**
 * Spend counters and daily caps in Redis, shared by every worker. Every call touches one key per command or
 * script (the per-user/channel/workspace counters are global keys, so a multi-key script would span Cluster
 * slots). Methods reject on Redis errors.
 */
export class SpendLedger {
  private readonly redis: SpendRedis & Commands;

  constructor(
    redis: SpendRedis,
    private readonly prefix: string,
    readonly caps: SpendCaps = {},
  ) {
    if (!defined.has(redis)) {
      redis.defineCommand("tlSpendAdmit", { numberOfKeys: 1, lua: ADMIT_LUA });
      redis.defineCommand("tlSpendSettle", { numberOfKeys: 1, lua: SETTLE_LUA });
      redis.defineCommand("tlSpendRelease", { numberOfKeys: 1, lua: RELEASE_LUA });
      defined.add(redis);
    }
    this.redis = redis as SpendRedis & Commands;
  }

  /** True when some scope has a cap. */
  get capped(): boolean {
    return SPEND_SCOPES.some((scope) => this.capOf(scope) !== undefined);
  }

  private capOf(scope: SpendScope): SpendCap | undefined {
    const cap = this.caps[scope];
    return cap && (cap.tokens !== undefined || cap.usd !== undefined) ? cap : undefined;
  }

  private key(scope: SpendScope, target: SpendTarget, now: number): string {
    return spendKey(this.prefix, scope, scopeId(scope, target), utcDay(now));
  }

  /**
   * Reserves room for one model request under every capped scope, scope by scope; waits (polling) while
   * requests in flight hold the last room of a cap. Resolves `undefined` when the request may go, or the
   * first cap that is used up (reservations already made are released). Resolves `undefined` at once when
   * `signal` aborts.
   */
  async admit(target: SpendTarget, requestId: string, signal?: AbortSignal): Promise<CapReached | undefined> {
    const held: string[] = [];
    for (const scope of SPEND_SCOPES) {
      const cap = this.capOf(scope);
      if (!cap) continue;
      for (;;) {
        const now = Date.now();
        const key = this.key(scope, target, now);
        const reply = await this.redis.tlSpendAdmit(
          key,
          requestId,
          now,
          cap.tokens ?? "",
          cap.usd ?? "",
          RESERVATION_MS,
          SPEND_RETENTION_MS,
        );
        if (reply[0] === "ok") {
          held.push(key);
          break;
        }
        if (reply[0] === "over") {
          await Promise.all(held.map((k) => this.redis.tlSpendRelease(k, requestId)));
          const unit = reply[1] === "usd" ? "usd" : "tokens";
          return {
            scope,
            unit,
            limit: (unit === "usd" ? cap.usd : cap.tokens) ?? 0,
            used: Number(reply[2]),
            resetsAt: nextUtcMidnight(now),
          };
        }
        if (signal?.aborted) return undefined;
        await new Promise((resolve) => setTimeout(resolve, WAIT_POLL_MS));
      }
    }
    return undefined;
  }

  /**
   * Records one request's use under every scope (capped or not) and drops its reservations; resolves the
   * first cap the new totals reach, if any.
   */
  async settle(
    target: SpendTarget,
    requestId: string,
    tokens: number,
    usd: number,
  ): Promise<CapReached | undefined> {
    const now = Date.now();
    const totals = await Promise.all(
      SPEND_SCOPES.map((scope) =>
        this.redis.tlSpendSettle(
          this.key(scope, target, now),
          requestId,
          Math.round(tokens),
          usd,
          SPEND_RETENTION_MS,
        ),
      ),
    );
    for (const [i, scope] of SPEND_SCOPES.entries()) {
      const cap = this.capOf(scope);
      const [usedTokens, usedUsd] = (totals[i] ?? ["0", "0"]).map(Number) as [number, number];
      const base = { scope, resetsAt: nextUtcMidnight(now) };
      if (cap?.tokens !== undefined && usedTokens >= cap.tokens)
        return { ...base, unit: "tokens", limit: cap.tokens, used: usedTokens };
      if (cap?.usd !== undefined && usedUsd >= cap.usd)
        return { ...base, unit: "usd", limit: cap.usd, used: usedUsd };
    }
    return undefined;
  }

  /** Drops a request's reservations (it never reached the model). */
  async release(target: SpendTarget, requestId: string): Promise<void> {
    const now = Date.now();
    await Promise.all(
      SPEND_SCOPES.map((scope) => this.redis.tlSpendRelease(this.key(scope, target, now), requestId)),
    );
  }

  /** What `scope` used on the UTC day of `now`. */
  async totals(scope: SpendScope, target: SpendTarget, now = Date.now()): Promise<SpendTotals> {
    const [tokens, usd, requests] = await this.redis.hmget(
      this.key(scope, target, now),
      "tokens",
      "usd",
      "requests",
    );
    return { tokens: Number(tokens ?? 0), usd: Number(usd ?? 0), requests: Number(requests ?? 0) };
  }
}
