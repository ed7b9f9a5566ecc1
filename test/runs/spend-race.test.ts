import type { ChildProcess } from "node:child_process";
import { afterEach, describe, expect, it, onTestFailed } from "vitest";
import { threadId } from "../../src/chat/index.js";
import type { RunsConfig } from "../../src/runs/index.js";
import { SpendLedger } from "../../src/runs/spend.js";
import { until } from "../support/async.js";
import { FixtureChildren } from "./fixtures/children.js";
import { alice, RunsHarness } from "./harness.js";

/**
 * Issue 19: daily caps hold across worker *processes*. Two worker processes (each with its own Redis
 * connections and concurrency 4) race many runs of one user; every response costs the same, and every run
 * would go on forever but for the cap. The day's use may pass the cap by at most one request's worth, and
 * every run ends with the chat message naming the cap.
 */

const children = new FixtureChildren("./spend-child.ts");

let h: RunsHarness | undefined;

afterEach(async () => {
  await children.killAll();
  await h?.close();
  h = undefined;
});

function startWorkerProcess(
  prefix: string,
  phase: string,
  env: Record<string, string>,
): Promise<ChildProcess> {
  return children.start({ TL_PREFIX: prefix, TL_PHASE: phase, ...env }, phase);
}

const RUNS = 10;

interface RaceCase {
  unit: string;
  caps: RunsConfig["spendCaps"];
  prices: RunsConfig["prices"];
  usage: Record<string, number>;
  /** The cap, what one request uses, in the ledger's unit. */
  cap: number;
  perRequest: number;
  measure: (totals: { tokens: number; usd: number }) => number;
  message: RegExp;
}

const CASES: RaceCase[] = [
  {
    unit: "tokens",
    caps: { user: { tokens: 3_000 } },
    prices: {},
    usage: { input: 100 },
    cap: 3_000,
    perRequest: 100,
    measure: (t) => t.tokens,
    message:
      /⚠️ The daily budget of 3k tokens for Alice is used up \(3(\.\d)?k tokens today\), so this run stopped\. It resets at 00:00 UTC/,
  },
  {
    unit: "money",
    // $10 per million input tokens: 1000 tokens = $0.01 a request.
    caps: { user: { usd: 0.3 } },
    prices: { scripted: { input: 10, cachedInput: 10, output: 10, reasoning: 10 } },
    usage: { input: 1000 },
    cap: 0.3,
    perRequest: 0.01,
    measure: (t) => t.usd,
    message:
      /⚠️ The daily budget of \$0\.30? for Alice is used up \(\$0\.3\d* today\), so this run stopped\. It resets at 00:00 UTC/,
  },
];

describe("a per-user daily cap raced by two worker processes", () => {
  for (const race of CASES) {
    it(`in ${race.unit}: passed by at most one request's worth, and every run stops with the cap's message`, async () => {
      children.logs = "";
      onTestFailed(() => console.error(`worker process logs:\n${children.logs}`));
      h = await new RunsHarness({ workers: 0 }).start();
      const harness = h;
      const env = {
        TL_CAPS: JSON.stringify(race.caps),
        TL_PRICES: JSON.stringify(race.prices),
        TL_USAGE: JSON.stringify(race.usage),
      };
      await Promise.all([
        startWorkerProcess(harness.prefix, "a", env),
        startWorkerProcess(harness.prefix, "b", env),
      ]);
      const threads = Array.from({ length: RUNS }, (_, i) => harness.thread(`race-${i}`));
      const runs = await Promise.all(threads.map((t) => harness.mention(t, "go", alice)));
      const key = (name: string) => `${harness.prefix}:child:${name}`;
      // One EXISTS per key: on a Redis Cluster the keys live in different slots.
      const finished = async () => {
        let count = 0;
        for (const id of runs) count += await harness.redis.exists(key(`chat:${id}`));
        return count;
      };
      await until(async () => (await finished()) === RUNS);

      // Both processes served requests: the race was real.
      const served = await Promise.all(
        ["a", "b"].map(async (p) => Number(await harness.redis.get(key(`requests:${p}`)))),
      );
      expect(served.every((count) => count > 0)).toBe(true);

      const ledger = new SpendLedger(harness.redis, harness.prefix);
      const used = race.measure(
        await ledger.totals("user", {
          threadId: threadId(threads[0]!),
          thread: threads[0]!,
          requester: alice,
        }),
      );
      expect(used).toBeGreaterThanOrEqual(race.cap - 1e-9);
      expect(used).toBeLessThanOrEqual(race.cap + race.perRequest + 1e-9);

      for (const id of runs) {
        const { texts } = JSON.parse((await harness.redis.get(key(`chat:${id}`)))!) as { texts: string[] };
        expect(texts.join("\n")).toMatch(race.message);
      }
    }, 60_000);
  }
});
