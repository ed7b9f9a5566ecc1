import type { Redis } from "ioredis";
import { z } from "zod";
import type { RunTool } from "../../src/runs/index.js";
import { connect } from "../support/redis.js";

/** The Redis key that opens the `gate` tool's call with `value` (set it to let the call finish). */
export function gateKey(prefix: string, value: string): string {
  return `${prefix}:e2e:gate:${value}`;
}

let redis: Redis | undefined;
function connection(): Redis {
  redis ??= connect();
  return redis;
}

/**
 * Tools for the Discord end-to-end tests, loaded by the worker process through `THREADLINE_TOOLS_MODULE`:
 * `gate` waits until the test sets {@link gateKey} in Redis (or the run is aborted, which it reports as
 * an error), `deploy` needs an approval and answers at once.
 */
export const tools: RunTool[] = [
  {
    name: "gate",
    description: "Waits until the gate named `value` opens.",
    parameters: z.object({ value: z.string() }),
    execute: async (_id, params: { value: string }, signal) => {
      const key = gateKey(process.env.THREADLINE_PREFIX ?? "tl", params.value);
      while ((await connection().exists(key)) === 0) {
        if (signal?.aborted) throw new Error(`gate ${params.value} was aborted`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      return { content: [{ type: "text", text: `gate ${params.value} opened` }], details: {} };
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
];
