// Started by tracing.test.ts: a worker process of its own (tracing on, service "threadline-worker-child")
// that executes one run job of the queue under THREADLINE_PREFIX, flushes its spans and exits.
import { startTracing } from "../../src/app/tracing.js";
import { runsConfig, startRunWorker } from "../../src/runs/index.js";
import { MemoryOutbound } from "../fakes/memory-outbound.js";
import { ScriptedModel, testAgent } from "../fakes/scripted-model.js";
import { connect } from "../support/redis.js";

const tracing = await startTracing(process.env, "threadline-worker-child");
const redis = connect();
const bull = connect({ blocking: true });
const handle = await startRunWorker({
  redis,
  bullConnection: bull,
  config: runsConfig({ prefix: process.env.THREADLINE_PREFIX ?? "" }),
  outbound: () => new MemoryOutbound(),
  agent: testAgent(new ScriptedModel([{ text: "Hello from the worker." }]).streamFn),
});
process.stdout.write("ready\n");
handle.worker.on("completed", () => {
  void (async () => {
    await handle.close(true);
    await tracing?.shutdown();
    redis.disconnect();
    bull.disconnect();
    process.exit(0);
  })();
});
