/**
 * What tracing and cost accounting cost per turn: CPU time of a worker process (gateway Intake + one run
 * worker, as the RunsHarness builds them, on the local Redis) per agent turn in these modes:
 *
 * - `off`: neither — tracing as without `OTEL_EXPORTER_OTLP_ENDPOINT` (no tracer provider, no propagator:
 *   the API's no-ops) and no cost accounting (see below);
 * - `again`: `off` a second time — the A/A ratio again/off is the noise floor of this machine right now;
 * - `cost`: cost accounting only: the operator's price table, and every run's {@link SpendMeter} pricing each
 *   response and adding it to the thread, user, channel and workspace day counters in Redis (no caps: the
 *   default), as the product always runs it;
 * - `record`: tracing only, the SDK as src/app/tracing.ts starts it (no context manager: every parent passed
 *   explicitly), spans recorded and batched but handed to a no-op exporter (its cost without the OTLP
 *   serialization);
 * - `trace`: tracing only, with the OTLP/HTTP JSON exporter to a receiver in this parent process (whose CPU is
 *   not counted);
 * - `both`: `trace` and `cost` together — what the product does with an OTLP endpoint set. Issue #19's
 *   target: median both/base ≤ 1.02 (tracing and cost accounting add ≤ 2 % CPU per turn).
 *
 * Cost accounting "off" is not a product setting (the product always accounts): the bench takes it out by
 * making `SpendMeter.prototype.wrap` the identity (no pricing, no ledger writes; the footer and the run's
 * stats still read the provider's own cost, 0 here) and emptying the run config's price table.
 *
 * One child process interleaves short batches (10 runs) of the modes, many rounds, the order rotating every
 * round (after warm-up rounds), so drifting machine load and JIT state hit all alike. Each round's baseline
 * is the mean of its two off batches (off, again); each mode's ratio is its CPU over that baseline, and the
 * A/A ratio again/off shows the noise. The result is the **median** of the per-round ratios — one noisy
 * round (another process taking the CPU) moves a median little, where it skews a sum — read against the A/A
 * median and its spread (25th–75th percentile of the per-round A/A ratios). The export's share of tracing's
 * cost is (trace − record) / (trace − 1) of those medians. Each run has 5 turns (4 with an instant tool
 * call, then a text answer) from the OpenAI client against FakeOpenAIServer (in this parent; 20 SSE text
 * chunks a turn). Run by `npm run bench:runs`, or alone:
 * `npx tsx bench/tracing.bench.ts [--rounds 40] [--only off|cost|record|trace|both]`; `--only` runs batches of
 * one mode only, for a profile of it: `node --cpu-prof --import tsx bench/tracing.bench.ts --only both` (the
 * child's profile is the larger .cpuprofile).
 */
import { fileURLToPath } from "node:url";
import { context, type ProxyTracerProvider, propagation, trace } from "@opentelemetry/api";
import { ExportResultCode } from "@opentelemetry/core";
import type { NodeTracerProvider, SpanExporter } from "@opentelemetry/sdk-trace-node";
import { startTracing } from "../src/app/tracing.js";
import { createConvertToLlm, createOpenAIStreamFn, openAIModel } from "../src/llm/index.js";
import type { PriceTable } from "../src/runs/index.js";
import { SpendMeter } from "../src/runs/spend-meter.js";
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

const MODES = ["off", "both", "again", "cost", "trace", "record"] as const;
type Mode = (typeof MODES)[number];
/** What each mode turns on: tracing (none, recorded to a no-op exporter, exported) and cost accounting. */
const SETUP: Record<Mode, { tracing: "none" | "record" | "export"; cost: boolean }> = {
  off: { tracing: "none", cost: false },
  again: { tracing: "none", cost: false },
  cost: { tracing: "none", cost: true },
  record: { tracing: "record", cost: false },
  trace: { tracing: "export", cost: false },
  both: { tracing: "export", cost: true },
};
/** The operator's price table of the cost-accounting modes. */
const PRICES: PriceTable = { "test-model": { input: 1, output: 2 } };
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

/** Unregisters tracer provider, context manager (none is registered) and propagator. */
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
 * unregisters everything, then registers the provider of its mode again as src/app/tracing.ts does at startup
 * (provider and W3C propagator, no context manager), and installs or takes out cost accounting. The harness
 * is built with the exporting SDK registered, so the gateway's outbound is wrapped in every mode (it asks
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
    config: { prices: PRICES },
  }).start();
  const accounting = SpendMeter.prototype.wrap;
  const unaccounted: SpendMeter["wrap"] = (streamFn) => streamFn;
  const costAccounting = (on: boolean) => {
    SpendMeter.prototype.wrap = on ? accounting : unaccounted;
    (h.config as { prices: PriceTable }).prices = on ? PRICES : {};
  };
  const used: Rounds = { off: [], both: [], again: [], cost: [], trace: [], record: [] };
  let next = 0;
  const batch = async (mode: Mode): Promise<number> => {
    const setup = SETUP[mode];
    tracingOff();
    if (setup.tracing === "export") exporter.register({ contextManager: null });
    if (setup.tracing === "record") recorder.register({ contextManager: null });
    costAccounting(setup.cost);
    const before = process.cpuUsage();
    await runBatch(h, next);
    next += BATCH;
    if (setup.tracing === "export") await exporting?.flush();
    if (setup.tracing === "record") await recording?.flush();
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
    costAccounting(true);
    exporter.register({ contextManager: null });
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
  const both = quantile(per("both"), 0.5);
  const traced = quantile(per("trace"), 0.5);
  const recorded = quantile(per("record"), 0.5);
  console.log(
    `CPU per turn (median of rounds): off ${ms(result.off)}, off again ${ms(result.again)}, ` +
      `cost accounting only ${ms(result.cost)}, tracing without export ${ms(result.record)}, ` +
      `tracing with export ${ms(result.trace)}, tracing + cost accounting ${ms(result.both)}`,
  );
  console.log(`A/A again/off:                              ${spread(aa)}`);
  console.log(`cost accounting only (cost/base):           ${spread(per("cost"))}`);
  console.log(`tracing without export (record/base):       ${spread(per("record"))}`);
  console.log(`tracing with export (trace/base):           ${spread(per("trace"))}`);
  console.log(`tracing + cost accounting vs neither (both/base): ${spread(per("both"))}`);
  console.log(
    `export's share of tracing's cost ((trace − record) / (trace − 1) of the medians): ${fmt((traced - recorded) / (traced - 1))}`,
  );
  console.log(
    `target: tracing + cost accounting vs neither, median ≤ 1.02: ${verdict(both <= 1.02)} (${fmt(both)})`,
  );
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
