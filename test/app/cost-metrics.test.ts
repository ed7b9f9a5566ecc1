import { afterEach, describe, expect, it } from "vitest";
import { Metrics } from "../../src/app/metrics.js";
import { RunsHarness } from "../runs/harness.js";

let h: RunsHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe("cost metrics", () => {
  it("adds each run's cost to threadline_cost_usd_total by model", async () => {
    const metrics = new Metrics({ defaultMetrics: false });
    h = await new RunsHarness({
      observer: metrics.observer(),
      // $1 per million output tokens: 3000 + 2000 output tokens cost $0.005.
      config: { prices: { scripted: { input: 0, output: 1 } } },
      script: [
        { text: "one", usage: { output: 3000 } },
        { text: "two", usage: { output: 2000 } },
      ],
    }).start();
    const thread = h.thread();
    await h.runFinished(await h.mention(thread, "first"));
    const next = await h.intake.submit(h.message(thread, "second"));
    await h.runFinished((next as { runId: string }).runId);
    const { body } = await metrics.render();
    const line = body.split("\n").find((l) => l.startsWith('threadline_cost_usd_total{model="scripted"}'));
    expect(Number(line?.split(" ")[1])).toBeCloseTo(0.005, 10);
  });
});
