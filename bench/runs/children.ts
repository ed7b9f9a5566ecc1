/** The child side: which scenario a `--child <kind>` process runs. */
import { runAsChild } from "../support/child.js";
import { bareChild } from "./bare-child.js";
import { latencyChild } from "./latency-child.js";
import { parkedChild } from "./parked-child.js";
import type { ChildArgs } from "./protocol.js";
import { serverChild } from "./server-child.js";
import { CHILD_DEADLINE_MS } from "./settings.js";
import { streamChild } from "./stream-child.js";

export const CHILDREN: Record<string, (args: ChildArgs) => Promise<void>> = {
  latency: latencyChild,
  bare: bareChild,
  stream: streamChild,
  parked: parkedChild,
};

/** Runs child `kind`: the server lives until the parent disconnects, the others until their result is sent. */
export async function runChild(kind: string, args: ChildArgs): Promise<void> {
  if (kind === "server") return await runAsChild(kind, serverChild, { stayAlive: true });
  await runAsChild(
    kind,
    async () => {
      const child = CHILDREN[kind];
      if (!child) throw new Error(`unknown child kind ${kind}`);
      await child(args);
    },
    { deadlineMs: CHILD_DEADLINE_MS },
  );
}
