/**
 * ⚡ interrupt latency on the local Redis (REDIS_URL): a gateway (Intake + createGateway) and one run worker
 * in one process, as the RunsHarness builds them, with an in-process model whose first answer streams and
 * then waits. Per round: a mention starts a run, its model request is streaming, a reply is queued (🧭), and
 * the ⚡ reaction is handed to the gateway. Measured from that call:
 *   - reaction → stream aborted: the model request's signal fires (setDisposition script → PUBLISH → the
 *     worker's bus subscriber → the run's interrupt latch → the request's linked signal);
 *   - reaction → next model request: the loop finished the cut answer, persisted it, drained the interrupt
 *     (tlDrain + tlAck) and called the model again with the message.
 * Target: ≤ 5 ms p50 from the reaction to the abort. Run by `npm run bench:runs` after the main scenarios,
 * or alone: `npx tsx bench/interrupt.bench.ts [--rounds 200]`.
 */
import {
  type AssistantMessage,
  createAssistantMessageEventStream,
  type StreamFn,
} from "../src/agent/index.js";
import { DEFAULT_REACTIONS } from "../src/chat/index.js";
import { createGateway } from "../src/runs/index.js";
import { emptyAssistantMessage } from "../test/fakes/scripted-model.js";
import { RunsHarness } from "../test/runs/harness.js";
import { loadAverages, percentile, verdict } from "./support/stats.js";

const argv = process.argv.slice(2);
const roundsArg = argv.indexOf("--rounds");
const rounds = roundsArg >= 0 ? Number(argv[roundsArg + 1]) : 200;
const warmup = 20;

/** Per thread: when its first request's signal aborted and when its second request began. */
const marks = new Map<string, { started?: () => void; aborted?: number; next?: number; done?: () => void }>();

function threadOf(messages: { content: unknown }[]): string {
  const first = JSON.stringify(messages[0]?.content ?? "");
  return /round-(\d+)/.exec(first)?.[1] ?? "";
}

const streamFn: StreamFn = (model, context, options) => {
  const stream = createAssistantMessageEventStream();
  const key = threadOf(context.messages);
  const mark = marks.get(key) ?? {};
  marks.set(key, mark);
  const partial: AssistantMessage = {
    ...emptyAssistantMessage(model),
    content: [{ type: "text", text: "" }],
  };
  const first = mark.aborted === undefined && context.messages.length === 1;
  stream.push({ type: "start", partial });
  if (first) {
    (partial.content[0] as { text: string }).text = "streaming…";
    stream.push({ type: "text_delta", contentIndex: 0, delta: "streaming…", partial });
    options.signal?.addEventListener(
      "abort",
      () => {
        mark.aborted = performance.now();
        partial.stopReason = "aborted";
        partial.errorMessage = "Request was aborted";
        stream.push({ type: "error", reason: "aborted", error: partial });
      },
      { once: true },
    );
    mark.started?.();
  } else {
    mark.next ??= performance.now();
    (partial.content[0] as { text: string }).text = "ok";
    stream.push({ type: "done", reason: "stop", message: partial });
    mark.done?.();
  }
  return stream;
};

async function main(): Promise<void> {
  const h = await new RunsHarness({ agent: { streamFn } }).start();
  const gateway = createGateway({ intake: h.intake, outbound: h.chat, config: h.config });
  const toAbort: number[] = [];
  const toNext: number[] = [];
  try {
    for (let i = 0; i < warmup + rounds; i++) {
      const key = String(i);
      const mark: NonNullable<ReturnType<typeof marks.get>> = {};
      marks.set(key, mark);
      const started = new Promise<void>((resolve) => {
        mark.started = resolve;
      });
      const done = new Promise<void>((resolve) => {
        mark.done = resolve;
      });
      const thread = h.thread(`i${i}`);
      const runId = await h.mention(thread, `round-${i} go`);
      await started;
      const reply = h.message(thread, "change of plan");
      await h.intake.submit(reply);
      const t0 = performance.now();
      await gateway.reaction({
        thread,
        messageId: reply.id,
        user: reply.author,
        emoji: DEFAULT_REACTIONS.interrupt,
        added: true,
      });
      await done;
      await h.runFinished(runId);
      if (i >= warmup && mark.aborted !== undefined && mark.next !== undefined) {
        toAbort.push(mark.aborted - t0);
        toNext.push(mark.next - t0);
      }
    }
  } finally {
    await h.close();
  }
  const row = (name: string, values: number[]) =>
    `${name.padEnd(34)} p50 ${percentile(values, 50, "floor").toFixed(2).padStart(6)} ms   p99 ${percentile(values, 99, "floor").toFixed(2).padStart(6)} ms`;
  console.log(`\n⚡ interrupt (${toAbort.length} rounds, load ${loadAverages()})`);
  console.log(row("reaction → stream aborted", toAbort));
  console.log(row("reaction → next model request", toNext));
  const p50 = percentile(toAbort, 50, "floor");
  console.log(`target reaction → abort ≤ 5 ms p50: ${verdict(p50 <= 5)} (${p50.toFixed(2)} ms)`);
  process.exit(0);
}

void main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
