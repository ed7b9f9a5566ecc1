import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { MAX_TOOL_LABELS, Metrics } from "../../src/app/metrics.js";
import { startOpsServer } from "../../src/app/ops-server.js";
import type { RunTool } from "../../src/runs/index.js";
import { RunsHarness } from "../runs/harness.js";

let h: RunsHarness | undefined;
let closeServer: (() => Promise<void>) | undefined;
afterEach(async () => {
  await h?.close();
  await closeServer?.();
  h = undefined;
  closeServer = undefined;
});

const lookup: RunTool = {
  name: "lookup",
  description: "looks something up",
  parameters: z.object({}),
  approval: "never",
  execute: async () => ({ content: [{ type: "text", text: "found" }], details: {} }),
};

async function scrape(metrics: Metrics): Promise<string> {
  const server = await startOpsServer(0, metrics, async () => true);
  closeServer = () => new Promise((resolve) => server.close(() => resolve()));
  const port = (server.address() as AddressInfo).port;
  return (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
}

function toolSeries(text: string): string[] {
  return text.split("\n").filter((line) => line.startsWith("threadline_tool_calls_total{"));
}

describe("tool-call metrics", () => {
  it("label real tools by name and tool names the model made up as unknown (via /metrics)", async () => {
    const metrics = new Metrics({ defaultMetrics: false });
    const madeUp = Array.from({ length: 40 }, (_, i) => ({
      id: `m${i}`,
      name: `invented_${i}`,
      arguments: {},
    }));
    h = await new RunsHarness({
      tools: [lookup],
      observer: metrics.observer(),
      script: [
        { toolCalls: [{ id: "c1", name: "lookup", arguments: {} }] },
        { toolCalls: madeUp },
        {
          toolCalls: [
            { id: "c2", name: "lookup", arguments: {} },
            { id: "c3", name: "nope", arguments: {} },
          ],
        },
        { text: "done" },
      ],
    }).start();
    const thread = h.thread();
    await h.runFinished(await h.mention(thread, "go"));
    const series = toolSeries(await scrape(metrics));
    expect(series.sort()).toEqual([
      'threadline_tool_calls_total{tool="lookup",outcome="ok"} 2',
      'threadline_tool_calls_total{tool="unknown",outcome="error"} 41',
    ]);
  });

  it("keep configured names, and never more than the label cap however many tools succeed", async () => {
    const metrics = new Metrics({ defaultMetrics: false, toolNames: ["deploy"] });
    const observer = metrics.observer();
    observer.toolCall?.("deploy", true);
    for (let i = 0; i < MAX_TOOL_LABELS + 20; i++) observer.toolCall?.(`tool_${i}`, false);
    const series = toolSeries(await scrape(metrics));
    expect(series).toContain('threadline_tool_calls_total{tool="deploy",outcome="error"} 1');
    expect(series).toContain('threadline_tool_calls_total{tool="other",outcome="ok"} 21');
    expect(series).toHaveLength(MAX_TOOL_LABELS + 1);
  });
});
