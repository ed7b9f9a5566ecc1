/**
 * What tracing costs per turn: CPU time of a worker process (gateway Intake + one run worker, as the
 * RunsHarness builds them, on the local Redis) per agent turn in four modes:
 *
 * - `off`: tracing as without `OTEL_EXPORTER_OTLP_ENDPOINT` — no tracer provider, no context manager, no
 *   propagator registered (the API's no-ops; the AsyncLocalStorage of the context manager disabled, so its
 *   promise hooks are off too);
 * - `context`: `off`, but the SDK's context manager (AsyncLocalStorage) registered and the batch run inside
 *   one `context.with`: what context propagation alone costs (Node 20's AsyncLocalStorage runs promise hooks
 *   on every promise of the process while it is in use), no span made;
 * - `again`: `off` a second time — the A/A ratio again/off is the noise floor of this machine right now;
 * - `record`: the SDK as src/app/tracing.ts starts it, spans recorded and batched, but handed to a no-op
 *   exporter (tracing's cost in this process without the OTLP serialization);
 * - `bare`: `record` without a context manager (`register({ contextManager: null })`): the SDK's and
 *   src/runs/tracing.ts's own cost, as if every context were passed explicitly (spans whose parent comes from
 *   the active context become roots, so this tree is not the real one; its cost is);
 * - `on`: `record` with the OTLP/HTTP JSON exporter, to a receiver in this parent process (whose CPU is not
 *   counted): tracing with export.
 *
 * One child process interleaves short batches (10 runs) of the modes, many rounds, the order rotating every
 * round (after warm-up rounds), so drifting machine load and JIT state hit all alike. Each round's baseline
 * is the mean of its two off batches (off, again); each mode's ratio is its CPU over that baseline, and the
 * A/A ratio again/off shows the noise. The result is the **median** of the per-round ratios — one noisy
 * round (another process taking the CPU) moves a median little, where it skews a sum — read against the A/A
 * median and its spread (25th–75th percentile of the per-round A/A ratios). The export's share of tracing's
 * cost is (on − record) / (on − 1) of those medians. Each run has 5 turns (4 with an instant tool
 * call, then a text answer) from the OpenAI client against FakeOpenAIServer (in this parent; 20 SSE text
 * chunks a turn). Cost accounting is on in all modes (a price table), so the ratios are tracing's own share.
 * Target: median on/base ≤ 1.02 (2 % CPU per turn). Run by `npm run bench:runs`, or alone:
 * `npx tsx bench/tracing.bench.ts [--rounds 40] [--only on|record|bare|context|off]`; `--only` runs batches of one mode
 * only, for a profile of it: `node --cpu-prof --import tsx bench/tracing.bench.ts --only on` (the child's
 * profile is the larger .cpuprofile).
 */
import { fileURLToPath } from "node:url";
import { context, type ProxyTracerProvider, propagation, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { ExportResultCode } from "@opentelemetry/core";
import type { NodeTracerProvider, SpanExporter } from "@opentelemetry/sdk-trace-node";
import { startTracing } from "../src/app/tracing.js";
import { createConvertToLlm, createOpenAIStreamFn, openAIModel } from "../src/llm/index.js";
import { chunks, FakeOpenAIServer, type FakeReply } from "../test/fakes/openai-server.js";
import { OtlpReceiver } from "../test/fakes/otlp-receiver.js";
import { instantTool, RunsHarness } from "../test/runs/harness.js";
import { Child, sendToParent } from "./support/child.js";
import { loadAverages, percentile, verdict } from "./support/stats.js";

const argv = process.argv.slice(2);
const option = (name: string, fallback: string) => {
  const at = argv.indexOf(name);
  return at >= 0 ? (argv[at + 1] ?? fallback) : fallback;
};
const TURNS = 5;
const BATCH = 10;
const WARMUP_ROUNDS = 3;

const MODES = ["off", "on", "again", "record", "context", "bare"] as const;
type Mode = (typeof MODES)[number];
/** CPU µs per turn of each mode, one entry per measured round. */
type Rounds = Record<Mode, number[]>;

/** Takes the spans and drops them: what recording costs without an export. */
const NOOP_EXPORTER: SpanExporter = {
  export: (_spans, done) => done({ code: ExportResultCode.SUCCESS }),
  shutdown: async () => {},
  forceFlush: async () => {},
};

/**
 * The model, served by the parent: 20 text chunks per turn (SSE, as FakeOpenAIServer writes them), a tool call
 * on the first TURNS − 1 turns (arguments differ per turn, so the loop guard stays quiet), usage last.
 */
function reply(turn: number): FakeReply {
  const text = Array.from({ length: 20 }, (_, i) => chunks.text(`word${i} `));
  const tail =
    turn < TURNS - 1
      ? [
          chunks.toolCall(0, { id: `call_${turn}`, name: "lookup", arguments: `{"value":"x${turn}"}` }),
          chunks.finish("tool_calls"),
        ]
      : [chunks.finish("stop")];
  return { kind: "stream", chunks: [chunks.role(), ...text, ...tail, chunks.usage(500, 40)] };
}

/** Unregisters tracer provider, context manager (its AsyncLocalStorage disabled) and propagator. */
function tracingOff(): void {
  trace.disable();
  context.disable();
  propagation.disable();
}

function registered(): NodeTracerProvider {
  return (trace.getTracerProvider() as ProxyTracerProvider).getDelegate() as NodeTracerProvider;
}

async function runBatch(h: RunsHarness, from: number): Promise<void> {
  const ids: string[] = [];
  for (let i = from; i < from + BATCH; i++) ids.push(await h.mention(h.thread(`b${i}`), `go ${i}`));
  await Promise.all(ids.map((id) => h.runFinished(id)));
}

/**
 * The measuring child: both SDKs are started once (one exporting, one recording only); each batch first
 * unregisters everything, then registers the provider of its mode again (as `NodeTracerProvider.register`
 * does at startup: provider, a new AsyncLocalStorage context manager, the W3C propagator). The harness is
 * built with the exporting SDK registered, so the gateway's outbound is wrapped in every mode (it asks
 * {@link tracingActive} per call when off: a global lookup).
 */
async function child(
  endpoint: string,
  modelUrl: string,
  rounds: number,
  only: Mode | undefined,
): Promise<void> {
  const env = { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint };
  const recording = await startTracing(env, "threadline-bench", { exporter: NOOP_EXPORTER });
  const recorder = registered();
  tracingOff();
  const exporting = await startTracing(env, "threadline-bench");
  const exporter = registered();
  const h = await new RunsHarness({
    agent: {
      model: openAIModel({ id: "test-model", baseUrl: modelUrl }),
      streamFn: createOpenAIStreamFn({ apiKey: "sk-bench", maxRetries: 0 }),
      convertToLlm: createConvertToLlm(),
    },
    tools: [instantTool("lookup").tool],
    config: { prices: { "test-model": { input: 1, output: 2 } } },
  }).start();
  const used: Rounds = { on: [], off: [], again: [], record: [], context: [], bare: [] };
  let next = 0;
  const batch = async (mode: Mode): Promise<number> => {
    tracingOff();
    if (mode === "on") exporter.register();
    if (mode === "record") recorder.register();
    if (mode === "bare") recorder.register({ contextManager: null });
    if (mode === "context") context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    const before = process.cpuUsage();
    if (mode === "context") await context.with(context.active(), () => runBatch(h, next));
    else await runBatch(h, next);
    next += BATCH;
    if (mode === "on") await exporting?.flush();
    if (mode === "record" || mode === "bare") await recording?.flush();
    const delta = process.cpuUsage(before);
    return (delta.user + delta.system) / (BATCH * TURNS);
  };
  // Each mode at each place of the order (rotations), forwards and backwards, so none always follows another.
  const orders: Mode[][] = [];
  for (let i = 0; i < MODES.length; i++) {
    const rotated = [...MODES.slice(i), ...MODES.slice(0, i)];
    orders.push(rotated, [...rotated].reverse());
  }
  if (only) orders.splice(0, orders.length, [only]);
  try {
    for (let i = 0; i < WARMUP_ROUNDS; i++) for (const mode of orders[i % orders.length]!) await batch(mode);
    for (let i = 0; i < rounds; i++) {
      for (const mode of orders[i % orders.length]!) used[mode].push(await batch(mode));
    }
    sendToParent({ type: "result", data: used });
  } finally {
    tracingOff();
    exporter.register();
    await h.close();
    await exporting?.shutdown();
    await recording?.shutdown();
  }
}

function measure(
  endpoint: string,
  modelUrl: string,
  rounds: number,
  only: Mode | undefined,
): Promise<Rounds> {
  const args = ["--child", endpoint, modelUrl, String(rounds), only ?? ""];
  // Two hours: far beyond any number of rounds, within setTimeout's range.
  return new Child("tracing", fileURLToPath(import.meta.url), args).result<Rounds>(7_200_000);
}

async function main(): Promise<void> {
  if (argv[0] === "--child") {
    await child(argv[1] ?? "", argv[2] ?? "", Number(argv[3]), asMode(argv[4]));
    process.exit(0);
  }
  const rounds = Number(option("--rounds", "40"));
  const only = asMode(option("--only", ""));
  const receiver = new OtlpReceiver();
  const endpoint = await receiver.start();
  const model = await FakeOpenAIServer.start();
  model.handler = (request) => {
    model.requests.length = 0; // the log would grow for the whole run
    const messages = (request.body as { messages?: { role?: string }[] } | undefined)?.messages ?? [];
    return reply(messages.filter((m) => m.role === "assistant").length);
  };
  const modelUrl = model.baseURL;
  let result: Rounds;
  try {
    result = await measure(endpoint, modelUrl, rounds, only);
  } finally {
    await receiver.close();
    await model.close();
  }
  const names = new Map<string, number>();
  for (const span of receiver.spans) names.set(span.name, (names.get(span.name) ?? 0) + 1);
  const fmt = (n: number) => n.toFixed(3);
  const ms = (values: number[]) => `${(quantile(values, 0.5) / 1000).toFixed(3)} ms`;
  console.log(
    `\ntracing cost (${rounds} rounds of ${BATCH} runs × ${TURNS} turns per mode, interleaved; load ${loadAverages()}; ${receiver.spans.length} spans received)`,
  );
  console.log(`spans by name: ${[...names].map(([name, n]) => `${name} ${n}`).join(", ")}`);
  if (only) {
    console.log(`CPU per turn, ${only} only (median of rounds): ${ms(result[only])}`);
    process.exit(0);
  }
  // Each round's baseline is the mean of its two "off" batches (less noisy than one); A/A stays again/off.
  const baseline = result.off.map((off, i) => (off + result.again[i]!) / 2);
  const per = (mode: Mode) => result[mode].map((value, i) => value / baseline[i]!);
  const aa = result.again.map((again, i) => again / result.off[i]!);
  const spread = (values: number[]) =>
    `median ${fmt(quantile(values, 0.5))}, spread p25–p75 ${fmt(quantile(values, 0.25))}–${fmt(quantile(values, 0.75))}`;
  const onOff = per("on");
  const ratio = quantile(onOff, 0.5);
  const recorded = quantile(per("record"), 0.5);
  console.log(
    `CPU per turn (median of rounds): off ${ms(result.off)}, off again ${ms(result.again)}, ` +
      `context manager only ${ms(result.context)}, spans without context manager ${ms(result.bare)}, ` +
      `tracing without export ${ms(result.record)}, ` +
      `tracing with export ${ms(result.on)}`,
  );
  console.log(`A/A again/off:                         ${spread(aa)}`);
  console.log(`context manager only (context/base):    ${spread(per("context"))}`);
  console.log(`spans, no context manager (bare/base):  ${spread(per("bare"))}`);
  console.log(`tracing without export (record/base):   ${spread(per("record"))}`);
  console.log(`tracing with export (on/base):         ${spread(onOff)}`);
  console.log(
    `export's share of tracing's cost ((on − record) / (on − 1) of the medians): ${fmt((ratio - recorded) / (ratio - 1))}`,
  );
  console.log(`target median on/base ≤ 1.02: ${verdict(ratio <= 1.02)} (${fmt(ratio)})`);
  process.exit(0);
}

function asMode(value: string | undefined): Mode | undefined {
  return MODES.find((mode) => mode === value);
}

/** The `q` quantile (0–1) of `values`, linear between the two nearest ranks. */
function quantile(values: number[], q: number): number {
  return percentile(values, q * 100, "linear");
}

void main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
