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
 * One child process runs short batches (10 runs; `--batch`) of the modes, every other batch `off`, the other
 * modes in between in an order that rotates and reverses every round, after 12 warm-up rounds (`--warmup`):
 * the JIT keeps getting faster for the first few hundred runs, and the machine's speed drifts over seconds,
 * so each batch is compared with the mean of the two `off` batches either side of it, not with a round-wide
 * baseline (that one, with 3 warm-up rounds, gave an A/A spread of ±15 % and moved the cost-accounting
 * ratio between 1.02 and 1.09 from run to run). `again` is an `off` batch measured like the others: its
 * ratios are the A/A noise. The result is the **median** of a mode's ratios with its distribution-free 95 %
 * interval, read against the A/A median and interval. The export's share of tracing's cost is
 * (trace − record) / (trace − 1) of those medians. Each run has 5 turns (4 with an instant tool
 * call, then a text answer) from the OpenAI client against FakeOpenAIServer (in this parent; 20 SSE text
 * chunks a turn). Run by `npm run bench:runs`, or alone:
 * `npx tsx bench/tracing.bench.ts [--rounds 40] [--warmup 12] [--batch 10] [--only off|cost|record|trace|both]`; `--only` runs batches of
 * one mode only, for a profile of it: `node --cpu-prof --import tsx bench/tracing.bench.ts --only both` (the
 * child's profile is the larger .cpuprofile).
 */
import { fileURLToPath } from "node:url";
import { context, type ProxyTracerProvider, propagation, trace } from "@opentelemetry/api";
import { ExportResultCode, W3CTraceContextPropagator } from "@opentelemetry/core";
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
const BATCH = Number(option("--batch", "10"));

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
/** CPU µs per turn of each measured batch, in the order they ran. */
type Batches = { mode: Mode; cpu: number }[];

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

/** How src/app/tracing.ts registers its provider: no context manager, the W3C trace-context propagator alone. */
const REGISTRATION = { contextManager: null, propagator: new W3CTraceContextPropagator() };

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
  warmupRounds: number,
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
  const used: Batches = [];
  let next = 0;
  const batch = async (mode: Mode): Promise<number> => {
    const setup = SETUP[mode];
    tracingOff();
    if (setup.tracing === "export") exporter.register(REGISTRATION);
    if (setup.tracing === "record") recorder.register(REGISTRATION);
    costAccounting(setup.cost);
    const before = process.cpuUsage();
    await runBatch(h, next);
    next += BATCH;
    if (setup.tracing === "export") await exporting?.flush();
    if (setup.tracing === "record") await recording?.flush();
    const delta = process.cpuUsage(before);
    return (delta.user + delta.system) / (BATCH * TURNS);
  };
  // Every other batch is `off`; the others take the remaining modes in turn, the order rotating and reversing
  // every round, so none always follows another.
  const others = MODES.filter((mode) => mode !== "off");
  const orders: Mode[][] = [];
  for (let i = 0; i < others.length; i++) {
    const rotated = [...others.slice(i), ...others.slice(0, i)];
    orders.push(rotated, [...rotated].reverse());
  }
  const schedule = (round: number): Mode[] =>
    only ? [only] : orders[round % orders.length]!.flatMap((mode) => ["off", mode] as Mode[]);
  try {
    for (let i = 0; i < warmupRounds; i++) for (const mode of schedule(i)) await batch(mode);
    for (let i = 0; i < rounds; i++) {
      for (const mode of schedule(i)) used.push({ mode, cpu: await batch(mode) });
    }
    if (!only) used.push({ mode: "off", cpu: await batch("off") }); // the last measured batch's right neighbour
    sendToParent({ type: "result", data: used });
  } finally {
    tracingOff();
    costAccounting(true);
    exporter.register(REGISTRATION);
    await h.close();
    await exporting?.shutdown();
    await recording?.shutdown();
  }
}

function measure(
  endpoint: string,
  modelUrl: string,
  rounds: number,
  warmupRounds: number,
  only: Mode | undefined,
): Promise<Batches> {
  const args = ["--child", endpoint, modelUrl, String(rounds), String(warmupRounds), only ?? ""];
  // Two hours: far beyond any number of rounds, within setTimeout's range.
  return new Child("tracing", fileURLToPath(import.meta.url), args).result<Batches>(7_200_000);
}

async function main(): Promise<void> {
  if (argv[0] === "--child") {
    await child(argv[1] ?? "", argv[2] ?? "", Number(argv[3]), Number(argv[4]), asMode(argv[5]));
    process.exit(0);
  }
  const rounds = Number(option("--rounds", "40"));
  const warmup = Number(option("--warmup", "12"));
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
  let result: Batches;
  try {
    result = await measure(endpoint, modelUrl, rounds, warmup, only);
  } finally {
    await receiver.close();
    await model.close();
  }
  const names = new Map<string, number>();
  for (const span of receiver.spans) names.set(span.name, (names.get(span.name) ?? 0) + 1);
  const fmt = (n: number) => n.toFixed(3);
  const ms = (mode: Mode) =>
    `${(
      quantile(
        result.filter((b) => b.mode === mode).map((b) => b.cpu),
        0.5,
      ) / 1000
    ).toFixed(3)} ms`;
  console.log(
    `\ntracing cost (${rounds} rounds of ${BATCH} runs × ${TURNS} turns per mode, each between two "off" batches, after ${warmup} warm-up rounds; load ${loadAverages()}; ${receiver.spans.length} spans received)`,
  );
  console.log(`spans by name: ${[...names].map(([name, n]) => `${name} ${n}`).join(", ")}`);
  if (only) {
    console.log(`CPU per turn, ${only} only (median of batches): ${ms(only)}`);
    process.exit(0);
  }
  // Each batch against the mean of the two "off" batches either side of it: the machine's speed drifts over
  // seconds (and the JIT for a while longer), so the nearest baseline is the least noisy one. "again" is an
  // "off" batch measured like the others: its ratios are the A/A noise.
  const per = (mode: Mode) =>
    result.flatMap((b, i) =>
      b.mode === mode ? [b.cpu / ((result[i - 1]!.cpu + result[i + 1]!.cpu) / 2)] : [],
    );
  const spread = (values: number[]) => {
    const [low, high] = medianInterval(values);
    return `median ${fmt(quantile(values, 0.5))} (95 % interval ${fmt(low)}–${fmt(high)}), spread p25–p75 ${fmt(quantile(values, 0.25))}–${fmt(quantile(values, 0.75))}`;
  };
  const both = quantile(per("both"), 0.5);
  const traced = quantile(per("trace"), 0.5);
  const recorded = quantile(per("record"), 0.5);
  console.log(
    `CPU per turn (median of batches): off ${ms("off")}, off again ${ms("again")}, ` +
      `cost accounting only ${ms("cost")}, tracing without export ${ms("record")}, ` +
      `tracing with export ${ms("trace")}, tracing + cost accounting ${ms("both")}`,
  );
  console.log(`A/A again/off:                              ${spread(per("again"))}`);
  console.log(`cost accounting only (cost/off):            ${spread(per("cost"))}`);
  console.log(`tracing without export (record/off):        ${spread(per("record"))}`);
  console.log(`tracing with export (trace/off):            ${spread(per("trace"))}`);
  console.log(`tracing + cost accounting vs neither (both/off): ${spread(per("both"))}`);
  console.log(
    `export's share of tracing's cost ((trace − record) / (trace − 1) of the medians): ${fmt((traced - recorded) / (traced - 1))}`,
  );
  console.log(
    `target: tracing + cost accounting vs neither, median ≤ 1.02: ${verdict(both <= 1.02)} (${fmt(both)})`,
  );
  process.exit(0);
}

/**
 * A distribution-free 95 % confidence interval of the median of `values`: the order statistics at
 * n/2 ± 0.98·√n (the normal approximation of the binomial ranks).
 */
function medianInterval(values: number[]): [number, number] {
  const sorted = [...values].sort((x, y) => x - y);
  const n = sorted.length;
  const half = 0.98 * Math.sqrt(n);
  const at = (rank: number) => sorted[Math.min(n - 1, Math.max(0, Math.round(rank)))]!;
  return [at(n / 2 - half - 1), at(n / 2 + half)];
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
