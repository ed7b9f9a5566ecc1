import { z } from "zod";
import type { RunTool } from "../../src/runs/index.js";

/**
 * Tools for end-to-end tests, loaded by the worker process through `THREADLINE_TOOLS_MODULE`:
 * `sleep` waits (until aborted), `deploy` needs an approval, `lookup` answers at once.
 */
export const tools: RunTool[] = [
  {
    name: "sleep",
    description: "Waits for `ms` milliseconds.",
    parameters: z.object({ ms: z.number() }),
    execute: async (_id, params: { ms: number }, signal) => {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(resolve, params.ms);
        signal?.addEventListener("abort", () => {
          clearTimeout(timer);
          reject(new Error("sleep was aborted"));
        });
      });
      return { content: [{ type: "text", text: `slept ${params.ms} ms` }], details: {} };
    },
  },
  {
    name: "deploy",
    description: "Deploys a service.",
    parameters: z.object({ service: z.string() }),
    approval: "ask",
    execute: async (_id, params: { service: string }) => ({
      content: [{ type: "text", text: `deployed ${params.service}` }],
      details: {},
    }),
  },
  {
    name: "lookup",
    description: "Looks something up.",
    parameters: z.object({ query: z.string() }),
    execute: async (_id, params: { query: string }) => ({
      content: [{ type: "text", text: `found ${params.query}` }],
      details: {},
    }),
  },
];
