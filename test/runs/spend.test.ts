import { afterEach, describe, expect, it } from "vitest";
import { threadId } from "../../src/chat/index.js";
import type { RunLogger, RunsConfig } from "../../src/runs/index.js";
import { SpendLedger } from "../../src/runs/spend.js";
import type { ScriptedResponse } from "../fakes/scripted-model.js";
import { alice, instantTool, RunsHarness } from "./harness.js";

let h: RunsHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** Per million tokens: 1000 input + 2000 cached + 2000 output + 1000 reasoning = $0.01 per response. */
const PRICES: RunsConfig["prices"] = { scripted: { input: 1, cachedInput: 0.5, output: 2, reasoning: 4 } };
const USAGE = { input: 1000, cacheRead: 2000, output: 3000, reasoning: 1000 };
const TOKENS_PER_RESPONSE = 6000;

function recordingLog() {
  const lines: { fields: Record<string, unknown>; message: string }[] = [];
  const log: RunLogger = {
    info: (fields, message) => lines.push({ fields, message }),
    warn: (fields, message) => lines.push({ fields, message }),
    error: (fields, message) => lines.push({ fields, message }),
  };
  return { log, lines };
}

const toolTurn = (n: number, usage: ScriptedResponse["usage"] = USAGE): ScriptedResponse => ({
  toolCalls: [{ id: `c${n}`, name: "lookup", arguments: { value: String(n) } }],
  usage,
});

describe("cost of a run", () => {
  it("prices each response from the table (cached and reasoning tokens apart) and shows and records it", async () => {
    const { log, lines } = recordingLog();
    const costs: [string, number][] = [];
    const lookup = instantTool("lookup");
    h = await new RunsHarness({
      tools: [lookup.tool],
      config: { prices: PRICES },
      log,
      observer: { cost: (model, usd) => costs.push([model, usd]) },
      script: [toolTurn(1), { text: "done", usage: USAGE }],
    }).start();
    const thread = h.thread();
    await h.runFinished(await h.mention(thread, "go"));
    expect(costs).toEqual([
      ["scripted", expect.closeTo(0.01, 10)],
      ["scripted", expect.closeTo(0.01, 10)],
    ]);
    expect(h.chat.texts(thread).join("\n")).toContain("· $0.02");
    const finished = lines.find((line) => line.message === "run finished");
    expect(finished?.fields.cost).toBeCloseTo(0.02, 10);
    const ledger = new SpendLedger(h.redis, h.prefix);
    const target = { threadId: threadId(thread), thread, requester: alice };
    for (const scope of ["thread", "user", "channel", "workspace"] as const) {
      const totals = await ledger.totals(scope, target);
      expect(totals.tokens).toBe(2 * TOKENS_PER_RESPONSE);
      expect(totals.usd).toBeCloseTo(0.02, 10);
      expect(totals.requests).toBe(2);
    }
  });

  it("takes the provider's own cost over the table", async () => {
    h = await new RunsHarness({
      config: { prices: PRICES },
      script: [{ text: "done", usage: { ...USAGE, cost: { total: 0.25 } } }],
    }).start();
    const thread = h.thread();
    await h.runFinished(await h.mention(thread, "go"));
    expect(h.chat.texts(thread).join("\n")).toContain("· $0.25");
    const ledger = new SpendLedger(h.redis, h.prefix);
    const totals = await ledger.totals("thread", { threadId: threadId(thread), thread, requester: alice });
    expect(totals.usd).toBeCloseTo(0.25, 10);
  });
});

describe("daily spending caps", () => {
  it("ends the turn that crosses a cap, stops with a message naming it, and refuses the next run at once", async () => {
    const lookup = instantTool("lookup");
    h = await new RunsHarness({
      tools: [lookup.tool],
      config: { prices: PRICES, spendCaps: { user: { tokens: 10_000 } } },
    }).start();
    let n = 0;
    h.model.fallback = () => toolTurn(n++);
    const first = h.thread("first");
    await h.runFinished(await h.mention(first, "go"));
    // Request 1 (6k) stayed under the cap, request 2 crossed it: its tool ran, then the run stopped.
    expect(h.model.requests).toHaveLength(2);
    expect(lookup.calls).toHaveLength(2);
    const shown = h.chat.texts(first).join("\n");
    expect(shown).toMatch(
      /⚠️ The daily budget of 10k tokens for Alice is used up \(12k tokens today\), so this run stopped\. It resets at 00:00 UTC/,
    );

    const second = h.thread("second");
    await h.runFinished(await h.mention(second, "again"));
    expect(h.model.requests).toHaveLength(2);
    expect(h.chat.texts(second).join("\n")).toContain("for Alice is used up");
  });

  it("counts caps per channel across two workers racing: never more than one request past the cap", async () => {
    const lookup = instantTool("lookup");
    const usage = { input: 100 };
    h = await new RunsHarness({
      tools: [lookup.tool],
      workers: 2,
      concurrency: 3,
      separateConnections: true,
      config: {
        spendCaps: { channel: { tokens: 1_000 } },
        loopGuard: { maxRepeats: 0, maxToolCallsPerTurn: 0, maxToolCallsPerRun: 0 },
      },
    }).start();
    let n = 0;
    h.model.fallback = () => ({ ...toolTurn(n++, usage), delayMs: 5 });
    const threads = [0, 1, 2, 3, 4, 5].map((i) => h!.thread(`race-${i}`));
    const runs = await Promise.all(threads.map((t) => h!.mention(t, "go")));
    await Promise.all(runs.map((run) => h!.runFinished(run)));
    const ledger = new SpendLedger(h.redis, h.prefix);
    const channel = await ledger.totals("channel", {
      threadId: threadId(threads[0]!),
      thread: threads[0]!,
      requester: alice,
    });
    expect(channel.tokens).toBeGreaterThanOrEqual(1_000);
    expect(channel.tokens).toBeLessThanOrEqual(1_100);
    for (const t of threads) expect(h.chat.texts(t).join("\n")).toContain("for this channel is used up");
  });
});
