import calculateSlot from "cluster-key-slot";
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

/**
 * settle → {tokens, usd} per key, in KEYS order: for each key drops the reservation (when ARGV[1] names one),
 * adds what the request used and returns the day's totals. The keys must share a Cluster slot.
 */
const SETTLE_LUA = `
local id, out = ARGV[1], {}
for i, key in ipairs(KEYS) do
  if id ~= '' then redis.call('HDEL', key, 'r:' .. id) end
  out[2 * i - 1] = tostring(redis.call('HINCRBY', key, 'tokens', ARGV[2]))
  out[2 * i] = tostring(redis.call('HINCRBYFLOAT', key, 'usd', ARGV[3]))
  redis.call('HINCRBY', key, 'requests', 1)
  redis.call('PEXPIRE', key, ARGV[4])
end
return out
`;

/**
 * release → 1: drops a reservation whose request never ran (refused by another scope, failed to start) from
 * every key. The keys must share a Cluster slot.
 */
const RELEASE_LUA = `
for _, key in ipairs(KEYS) do redis.call('HDEL', key, 'r:' .. ARGV[1]) end
return 1
`;

type SpendRedis = Redis | Cluster;
/** How many keys one settle or release call carries: 1 to the four scopes. */
type KeyCount = 1 | 2 | 3 | 4;
type Commands = {
  tlSpendAdmit(key: string, ...args: (string | number)[]): Promise<string[]>;
} & {
  /** The keys, then id ("" = none), tokens, usd, retention ms. */
  [N in KeyCount as `tlSpendSettle${N}`]: (...args: (string | number)[]) => Promise<string[]>;
} & {
  /** The keys, then the id. */
  [N in KeyCount as `tlSpendRelease${N}`]: (...args: string[]) => Promise<number>;
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
 * Spend counters and daily caps in Redis, shared by every worker. Admission runs one single-key script per
 * capped scope; settle and release run one multi-key script per Redis Cluster slot the four counters fall in
 * (the per-user/channel/workspace counters are global keys, so on a Cluster they usually land in different
 * slots; on one server all four go in one call). Methods reject on Redis errors.
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
      // One command per key count (one script each in Redis): with the count fixed, a call's arguments start
      // with its first key, which is what ioredis's auto-pipelining routes a custom command by on a Cluster.
      for (let n = 1; n <= SPEND_SCOPES.length; n++) {
        redis.defineCommand(`tlSpendSettle${n}`, { numberOfKeys: n, lua: SETTLE_LUA });
        redis.defineCommand(`tlSpendRelease${n}`, { numberOfKeys: n, lua: RELEASE_LUA });
      }
      defined.add(redis);
    }
    this.redis = redis as SpendRedis & Commands;
    const keyPrefix = redis.options.keyPrefix ?? "";
    this.slotOf = redis.isCluster ? (key) => calculateSlot(keyPrefix + key) : undefined;
  }

  /** A key's Cluster slot (ioredis adds `keyPrefix` before routing); undefined on one server. */
  private readonly slotOf: ((key: string) => number) | undefined;

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
          await this.releaseKeys(held, requestId);
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

  /** Today's four counters, in {@link SPEND_SCOPES} order. */
  private keys(target: SpendTarget, now: number): string[] {
    const day = utcDay(now);
    return SPEND_SCOPES.map((scope) => spendKey(this.prefix, scope, scopeId(scope, target), day));
  }

  /**
   * `keys` grouped by Cluster slot, as index lists (one multi-key script call each); one group on one server,
   * none for no keys.
   */
  private slotGroups(keys: readonly string[]): number[][] {
    const all = keys.map((_, i) => i);
    const slotOf = this.slotOf;
    if (!slotOf) return all.length > 0 ? [all] : [];
    const groups = new Map<number, number[]>();
    for (const i of all) {
      const slot = slotOf(keys[i] ?? "");
      const group = groups.get(slot);
      if (group) group.push(i);
      else groups.set(slot, [i]);
    }
    return [...groups.values()];
  }

  /**
   * Records one request's use under every scope (capped or not) and drops its reservations (`requestId`, from
   * {@link admit}; undefined when it holds none, as an uncapped request); resolves the first cap the new
   * totals reach, if any. One script call per Cluster slot group.
   */
  async settle(
    target: SpendTarget,
    requestId: string | undefined,
    tokens: number,
    usd: number,
  ): Promise<CapReached | undefined> {
    const now = Date.now();
    const keys = this.keys(target, now);
    const used: [number, number][] = [];
    await Promise.all(
      this.slotGroups(keys).map(async (group) => {
        const reply = await this.redis[`tlSpendSettle${group.length as KeyCount}`](
          ...group.map((i) => keys[i] ?? ""),
          requestId ?? "",
          Math.round(tokens),
          usd,
          SPEND_RETENTION_MS,
        );
        for (const [j, i] of group.entries()) used[i] = [Number(reply[2 * j]), Number(reply[2 * j + 1])];
      }),
    );
    for (const [i, scope] of SPEND_SCOPES.entries()) {
      const cap = this.capOf(scope);
      if (!cap) continue;
      const [usedTokens, usedUsd] = used[i] ?? [0, 0];
      const base = { scope, resetsAt: nextUtcMidnight(now) };
      if (cap.tokens !== undefined && usedTokens >= cap.tokens)
        return { ...base, unit: "tokens", limit: cap.tokens, used: usedTokens };
      if (cap.usd !== undefined && usedUsd >= cap.usd)
        return { ...base, unit: "usd", limit: cap.usd, used: usedUsd };
    }
    return undefined;
  }

  /** Drops a request's reservations (it never reached the model). One script call per Cluster slot group. */
  async release(target: SpendTarget, requestId: string): Promise<void> {
    await this.releaseKeys(this.keys(target, Date.now()), requestId);
  }

  /** Drops `requestId`'s reservation from `keys`: one script call per Cluster slot group, none for no keys. */
  private async releaseKeys(keys: readonly string[], requestId: string): Promise<void> {
    await Promise.all(
      this.slotGroups(keys).map((group) =>
        this.redis[`tlSpendRelease${group.length as KeyCount}`](
          ...group.map((i) => keys[i] ?? ""),
          requestId,
        ),
      ),
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
