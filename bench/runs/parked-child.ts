/** Child `parked`: runs parked on approval waits. */
import { parseThreadId, threadId } from "../../src/chat/index.js";
import { createOpenAIStreamFn, openAIModel } from "../../src/llm/index.js";
import { createRunQueue, Intake, threadKeys } from "../../src/runs/index.js";
import { MemoryOutbound } from "../../test/fakes/memory-outbound.js";
import { connect, requireRedis } from "../../test/support/redis.js";
import { sendToParent } from "../support/child.js";
import { type ChildArgs, type ParkedResult, resourceCounts } from "./protocol.js";
import {
  alice,
  approvalCards,
  benchConfig,
  chatMessage,
  deployTool,
  gc,
  now,
  parkedRunId,
  sleep,
  startBenchWorker,
  threadRef,
  WAIT_MS,
  withTimeout,
} from "./settings.js";

export async function parkedChild(args: ChildArgs): Promise<void> {
  const config = benchConfig(args.prefix);
  const redis = connect();
  const bull = connect({ blocking: true });
  await requireRedis(redis);
  const chat = new MemoryOutbound({ recordOps: false });
  const cards = approvalCards(chat, (thread) => parseThreadId(thread).thread); // by thread name
  const { handle, completions } = await startBenchWorker({
    redis,
    bull,
    config,
    chat,
    agent: {
      model: openAIModel({ id: "park", baseUrl: args.baseURL }),
      streamFn: createOpenAIStreamFn({ apiKey: "sk-bench", maxRetries: 0 }),
      tools: [deployTool()],
    },
    concurrency: args.n + args.warm,
  });

  // Warm-up: park, approve and finish some runs (JIT, pools, Redis scripts), then the baseline.
  const warmBull = connect({ blocking: true });
  const warmIntake = new Intake(redis, createRunQueue(warmBull, args.prefix), config);
  const warmIds = Array.from({ length: args.warm }, (_, i) => `pw-${i}`);
  await Promise.all(warmIds.map((id) => warmIntake.submit(chatMessage(id, "deploy"))));
  for (const id of warmIds) {
    const approvalId = await withTimeout(cards.wait(id), WAIT_MS, `${id} card`);
    await warmIntake.decide(threadRef(id), approvalId, alice, "approve");
  }
  await withTimeout(Promise.all(warmIds.map((id) => completions.wait(id))), 60_000, "warm-up runs");
  await sleep(300);
  gc();
  await sleep(100);
  gc();
  const base = process.memoryUsage();
  const resourcesBase = resourceCounts();
  const ids = Array.from({ length: args.n }, (_, i) => parkedRunId(i));
  const parked = Promise.all(ids.map((id) => cards.wait(id)));
  const t0 = now();
  sendToParent({ type: "ready" });
  await withTimeout(parked, 90_000, `${args.n} approval cards`);
  const parkMs = now() - t0;
  await sleep(300);
  gc();
  await sleep(100);
  gc();
  const after = process.memoryUsage();
  const resources = resourceCounts();
  for (const [name, count] of Object.entries(resourcesBase)) resources[name] = (resources[name] ?? 0) - count;
  // Read after the memory was: what each parked run holds as its transcript (the target counts beyond it).
  const transcripts = await ids
    .reduce(
      (batch, id) => batch.lrange(threadKeys(config.prefix, threadId(threadRef(id))).transcript, 0, -1),
      redis.pipeline(),
    )
    .exec();
  let transcriptBytes = 0;
  for (const [err, entries] of transcripts ?? []) {
    if (err) throw err;
    for (const entry of entries as string[]) transcriptBytes += Buffer.byteLength(entry);
  }
  const result: ParkedResult = {
    n: args.n,
    transcriptBytes,
    parkMs,
    rssBase: base.rss,
    rssAfter: after.rss,
    heapBase: base.heapUsed,
    heapAfter: after.heapUsed,
    externalBase: base.external + base.arrayBuffers,
    externalAfter: after.external + after.arrayBuffers,
    resources,
  };
  sendToParent({ type: "result", data: result });
  // The parked runs never finish: stop without waiting for them (the keys are deleted by the parent).
  await handle.close(true);
  for (const connection of [redis, bull, warmBull]) connection.disconnect();
}
