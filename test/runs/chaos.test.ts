import { describe, expect, it } from "vitest";
import { formatReport, INVARIANT_COUNTS, runChaos } from "../../bench/chaos/run.js";

/**
 * The short version of `npm run chaos` (DESIGN.md §4, issue 12 "Prove it"): a gateway and three worker
 * processes against a private Redis with AOF, a few hundred messages in a dozen threads while workers are
 * SIGKILLed and SIGSTOPped past their lease, Redis is restarted and goes away for a few seconds, and some
 * messages are delivered twice with the same id. Nothing may be lost, duplicated, reordered, executed twice
 * or left stuck. Fixed seed, so a failure can be replayed with `npm run chaos -- --seed 1212 …` (see the
 * options below).
 *
 * `it.fails` while issue 12 is open: on main at 9e4d51d this run lost 12 messages and left 1 thread stuck
 * (with Redis restarts alone: messages in intake state `queued` in a thread whose lease is free, i.e. queued
 * for a run that ended without draining them, and no run ever starts for them). Switch it to `it` once
 * src/runs is fixed.
 */
describe("chaos, short", () => {
  it.fails("keeps every run invariant through worker kills and pauses, Redis restarts, an outage and retries", async () => {
    const report = await runChaos({
      threads: 12,
      messages: 300,
      workers: 3,
      durationMs: 45_000,
      seed: 1212,
      kills: 3,
      pauses: 1,
      restarts: 2,
      outages: 1,
      retryRate: 0.1,
      settleMs: 60_000,
      modelDelayMs: 5,
    });
    console.log(formatReport(report));
    // The chaos happened (else zeros below prove nothing).
    expect(report.chaos.kills).toBeGreaterThanOrEqual(2);
    expect(report.chaos.restarts + report.chaos.outages).toBeGreaterThanOrEqual(2);
    expect(report.replays.done).toBeGreaterThan(0);
    expect(report.counts.accepted).toBeGreaterThan(200);
    const counts = Object.fromEntries(INVARIANT_COUNTS.map((name) => [name, report.counts[name]]));
    expect(counts).toEqual({ lost: 0, duplicated: 0, reordered: 0, executedTwice: 0, stuck: 0 });
  }, 300_000);
});
