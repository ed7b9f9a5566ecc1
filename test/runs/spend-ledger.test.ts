import calculateSlot from "cluster-key-slot";
import type { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { threadId } from "../../src/chat/index.js";
import { spendKey } from "../../src/runs/keys.js";
import { SPEND_SCOPES, SpendLedger, scopeId, utcDay } from "../../src/runs/spend.js";
import { connect, deletePrefix, isCluster, requireRedis, serversOf, uniquePrefix } from "../support/redis.js";

const redis = connect();
const prefix = uniquePrefix("spend-ledger");
afterAll(async () => {
  await deletePrefix(redis, prefix);
  redis.disconnect();
});

const thread = { platform: "slack" as const, workspace: "T1", channel: "C1", thread: "1.0" };
const target = { threadId: threadId(thread), thread, requester: { id: "U1", name: "Ann", isBot: false } };
const ALL_CAPPED = {
  thread: { tokens: 1e9 },
  user: { tokens: 1e9 },
  channel: { usd: 1e9 },
  workspace: { usd: 1e9 },
};

/** Today's four counter keys of `target` under `ledgerPrefix`, in scope order. */
function keysOf(ledgerPrefix: string): string[] {
  const day = utcDay(Date.now());
  return SPEND_SCOPES.map((scope) => spendKey(ledgerPrefix, scope, scopeId(scope, target), day));
}

/** The keys grouped as one script call may carry them: by Cluster slot, or all together on one server. */
function expectedGroups(keys: string[]): string[][] {
  if (!isCluster(redis)) return [keys];
  const groups = new Map<number, string[]>();
  for (const key of keys) groups.set(calculateSlot(key), [...(groups.get(calculateSlot(key)) ?? []), key]);
  return [...groups.values()];
}

/** The script calls (EVAL/EVALSHA, not the calls scripts make) every server runs while `during` runs. */
async function scriptCalls(during: () => Promise<unknown>): Promise<string[][]> {
  const calls: string[][] = [];
  const echoes: string[] = [];
  const monitors = await Promise.all(
    serversOf(redis).map(async (server) => {
      // Not `server.monitor()` (see test/slack/ack-first.test.ts): wait for the connection to be monitoring.
      const monitor = server.duplicate({ monitor: true, lazyConnect: false }) as Redis;
      await new Promise<void>((resolve) => monitor.once("monitoring", () => resolve()));
      monitor.on("monitor", (_time: string, args: string[], source: string) => {
        if (source !== "lua" && /^eval/i.test(args[0] ?? "") && args.some((arg) => arg.startsWith(prefix)))
          calls.push(args);
        if (/^echo$/i.test(args[0] ?? "")) echoes.push(args[1] ?? "");
      });
      return monitor;
    }),
  );
  try {
    await during();
    // A keyless sentinel each server runs itself: once it is seen, every earlier command has been.
    const sentinel = `${prefix}:sentinel:${Math.random()}`;
    const servers = serversOf(redis);
    await Promise.all(servers.map((server) => server.echo(sentinel)));
    while (echoes.filter((echo) => echo === sentinel).length < servers.length)
      await new Promise((resolve) => setTimeout(resolve, 10));
    return calls;
  } finally {
    for (const monitor of monitors) monitor.disconnect();
  }
}

/** The keys one EVAL/EVALSHA call carries (its numkeys argument, then that many keys). */
const keysOfCall = (args: string[]) => args.slice(3, 3 + Number(args[2]));

describe("SpendLedger", () => {
  it("settles a response under all four scopes in one script call per Cluster slot (one call on one server), with each scope's totals", async () => {
    await requireRedis(redis);
    const ledgerPrefix = `${prefix}:a`;
    const ledger = new SpendLedger(redis, ledgerPrefix);
    const keys = keysOf(ledgerPrefix);
    // On a Cluster the thread's counter (its hash tag) and the global ones fall in different slots.
    if (isCluster(redis)) expect(expectedGroups(keys).length).toBeGreaterThan(1);
    // The first settle loads the script (EVALSHA, NOSCRIPT, EVAL): counted from the second one.
    await ledger.settle(target, undefined, 100, 0.25);
    const calls = await scriptCalls(() => ledger.settle(target, undefined, 60.4, 0.5));
    expect(calls.map(keysOfCall).sort()).toEqual(expectedGroups(keys).sort());
    // No reservation, so no request id sent (the id argument is empty).
    for (const call of calls) expect(call[3 + Number(call[2])]).toBe("");
    for (const scope of SPEND_SCOPES) {
      const totals = await ledger.totals(scope, target);
      expect(totals).toEqual({ tokens: 160, usd: expect.closeTo(0.75, 10), requests: 2 });
    }
    for (const key of keys) expect(await redis.pttl(key)).toBeGreaterThan(30 * 24 * 60 * 60_000);
  });

  it("settle and release drop the reservations admit made under every capped scope, one script call per slot", async () => {
    const ledgerPrefix = `${prefix}:b`;
    const ledger = new SpendLedger(redis, ledgerPrefix, ALL_CAPPED);
    const keys = keysOf(ledgerPrefix);
    const reservations = async () =>
      (await Promise.all(keys.map((key) => redis.hkeys(key))))
        .flat()
        .filter((field) => field.startsWith("r:"));

    await ledger.settle(target, undefined, 10, 0.01); // an average request to reserve, and the scripts loaded
    expect(await ledger.admit(target, "req-1")).toBeUndefined();
    expect(await reservations()).toEqual(["r:req-1", "r:req-1", "r:req-1", "r:req-1"]);
    const settles = await scriptCalls(() => ledger.settle(target, "req-1", 10, 0.01));
    expect(settles.map(keysOfCall).sort()).toEqual(expectedGroups(keys).sort());
    expect(await reservations()).toEqual([]);
    for (const scope of SPEND_SCOPES) expect((await ledger.totals(scope, target)).requests).toBe(2);

    expect(await ledger.admit(target, "req-2")).toBeUndefined();
    await ledger.release(target, "req-2"); // the release script loaded
    expect(await ledger.admit(target, "req-3")).toBeUndefined();
    expect(await reservations()).toEqual(["r:req-3", "r:req-3", "r:req-3", "r:req-3"]);
    const releases = await scriptCalls(() => ledger.release(target, "req-3"));
    expect(releases.map(keysOfCall).sort()).toEqual(expectedGroups(keys).sort());
    expect(await reservations()).toEqual([]);
    for (const scope of SPEND_SCOPES) expect((await ledger.totals(scope, target)).requests).toBe(2);
  });

  it("reports the first cap the settled totals reach, in scope order, whichever slot call returned it", async () => {
    const ledgerPrefix = `${prefix}:c`;
    const ledger = new SpendLedger(redis, ledgerPrefix, { channel: { usd: 1 }, workspace: { tokens: 150 } });
    expect(await ledger.settle(target, undefined, 100, 0.6)).toBeUndefined();
    expect(await ledger.settle(target, undefined, 100, 0.6)).toMatchObject({
      scope: "channel",
      unit: "usd",
      limit: 1,
      used: expect.closeTo(1.2, 10),
    });
    const onlyWorkspace = new SpendLedger(redis, ledgerPrefix, { workspace: { tokens: 150 } });
    expect(await onlyWorkspace.settle(target, undefined, 1, 0)).toMatchObject({
      scope: "workspace",
      unit: "tokens",
      limit: 150,
      used: 201,
    });
  });

  it("admit refuses at a used-up cap and releases what it reserved under the scopes before it (none, or some)", async () => {
    const ledgerPrefix = `${prefix}:d`;
    const keys = keysOf(ledgerPrefix);
    await new SpendLedger(redis, ledgerPrefix).settle(target, undefined, 500, 0);
    const firstScope = new SpendLedger(redis, ledgerPrefix, { thread: { tokens: 100 } });
    expect(await firstScope.admit(target, "req-1")).toMatchObject({ scope: "thread", used: 500 });
    const laterScope = new SpendLedger(redis, ledgerPrefix, {
      thread: { tokens: 1e9 },
      user: { tokens: 1e9 },
      workspace: { tokens: 100 },
    });
    expect(await laterScope.admit(target, "req-2")).toMatchObject({ scope: "workspace", used: 500 });
    const fields = (await Promise.all(keys.map((key) => redis.hkeys(key)))).flat();
    expect(fields.filter((field) => field.startsWith("r:"))).toEqual([]);
  });
});
