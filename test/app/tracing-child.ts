// Started by tracing.test.ts: what the CLI does about tracing, then one log line and one run-side span.
import { createLogger } from "../../src/app/logger.js";
import { startTracing } from "../../src/app/tracing.js";
import { RunTracer } from "../../src/runs/tracing.js";

const tracing = await startTracing(process.env, "threadline-child");
const tracer = new RunTracer({ threadId: "slack:T:C:1", runId: "r1" });
await tracer.run(async () => {
  createLogger("info", {}, { write: () => {} }).info("inside a run");
});
await tracing?.shutdown();
