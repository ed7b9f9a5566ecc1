/**
 * What tracing costs per turn: CPU time of a worker process (gateway Intake + one run worker, as the
 * RunsHarness builds them, on the local Redis) per agent turn, tracing off (the API's no-ops) vs on (the SDK
 * exporting every span as OTLP/HTTP JSON to a receiver in this parent process, whose CPU is not counted).
 * One child process interleaves short batches (10 runs) of the modes on / off / off-again, many rounds, the
 * order rotating every round (after warm-up rounds), so drifting machine load and JIT state hit all alike.
 * Each round gives two ratios: on/off (tracing's cost) and again/off (an A/A ratio: the same mode twice,
 * pure noise). The result is the **median** of the per-round on/off ratios — one noisy round (another
 * process taking the CPU) moves a median little, where it skews a sum — read against the A/A median and
 * its spread (25th–75th percentile of the per-round A/A ratios). Each run has 5 turns (4 with an instant
 * tool call, then a text answer) from the OpenAI client against FakeOpenAIServer (in this parent; 20 SSE
 * text chunks a turn). Cost accounting is on in all modes (a price table), so the ratio is tracing's own
 * share. Target: median on/off ≤ 1.02 (2 % CPU per turn). Run by `npm run bench:runs`, or alone:
 * `npx tsx bench/tracing.bench.ts [--rounds 40]`.
 */
import { fork } from "node:child_process";
import { loadavg } from "node:os";
import { fileURLToPath } from "node:url";
import { type ProxyTracerProvider, trace } from "@opentelemetry/api";
import { startTracing } from "../src/app/tracing.js";
import { createConvertToLlm, createOpenAIStreamFn, openAIModel } from "../src/llm/index.js";
import { chunks, FakeOpenAIServer, type FakeReply } from "../test/fakes/openai-server.js";
import { OtlpReceiver } from "../test/fakes/otlp-receiver.js";
import { instantTool, RunsHarness } from "../test/runs/harness.js";

const argv = process.argv.slice(2);
const option = (name: string, fallback: number) => {
  const at = argv.indexOf(name);
  return at >= 0 ? Number(argv[at + 1]) : fallback;
};
const TURNS = 5;
const BATCH = 10;
const WARMUP_ROUNDS = 3;

type Mode = "on" | "off" | "again";
/** CPU µs per turn of each mode, one entry per measured round. */
type Rounds = Record<Mode, number[]>;

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

async function runBatch(h: RunsHarness, from: number): Promise<void> {
  const ids: string[] = [];
  for (let i = from; i < from + BATCH; i++) ids.push(await h.mention(h.thread(`b${i}`), `go ${i}`));
  await Promise.all(ids.map((id) => h.runFinished(id)));
}

/**
 * The measuring child: tracing is started once; each round runs one batch with the tracer provider
 * unregistered (`trace.disable()`: every span is the API's no-op, as without an endpoint) and one with it
 * registered again, in alternating order, and adds up the CPU time of each. The context manager and the
 * propagator stay registered in the "off" batches, so the difference slightly understates tracing's cost
 * (measured separately as within the noise).
 */
async function child(endpoint: string, modelUrl: string, rounds: number): Promise<void> {
  const tracing = await startTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint }, "threadline-bench");
  const provider = (trace.getTracerProvider() as ProxyTracerProvider).getDelegate();
  const h = await new RunsHarness({
    agent: {
      model: openAIModel({ id: "test-model", baseUrl: modelUrl }),
      streamFn: createOpenAIStreamFn({ apiKey: "sk-bench", maxRetries: 0 }),
      convertToLlm: createConvertToLlm(),
    },
    tools: [instantTool("lookup").tool],
    config: { prices: { "test-model": { input: 1, output: 2 } } },
  }).start();
  // "again" is a second "off": the A/A ratio again/off is the noise floor of this machine right now.
  const used: Rounds = { on: [], off: [], again: [] };
  let next = 0;
  const batch = async (mode: Mode): Promise<number> => {
    if (mode === "on") trace.setGlobalTracerProvider(provider);
    else trace.disable();
    const before = process.cpuUsage();
    await runBatch(h, next);
    next += BATCH;
    if (mode === "on") await tracing?.flush();
    const delta = process.cpuUsage(before);
    return (delta.user + delta.system) / (BATCH * TURNS);
  };
  // Every order of the three modes, so none is always first (after a flush) or last.
  const orders: Mode[][] = [
    ["off", "on", "again"],
    ["on", "again", "off"],
    ["again", "off", "on"],
    ["off", "again", "on"],
    ["on", "off", "again"],
    ["again", "on", "off"],
  ];
  try {
    for (let i = 0; i < WARMUP_ROUNDS; i++) for (const mode of orders[i % orders.length]!) await batch(mode);
    for (let i = 0; i < rounds; i++) {
      for (const mode of orders[i % orders.length]!) used[mode].push(await batch(mode));
    }
    process.send?.(used);
  } finally {
    trace.setGlobalTracerProvider(provider);
    await h.close();
    await tracing?.shutdown();
  }
}

function measure(endpoint: string, modelUrl: string, rounds: number): Promise<Rounds> {
  return new Promise((resolve, reject) => {
    const proc = fork(fileURLToPath(import.meta.url), ["--child", endpoint, modelUrl, String(rounds)], {
      execArgv: process.execArgv,
    });
    proc.on("message", (message: Rounds) => resolve(message));
    proc.on("exit", (code) => (code === 0 ? undefined : reject(new Error(`child exited ${code}`))));
  });
}

async function main(): Promise<void> {
  if (argv[0] === "--child") {
    await child(argv[1] ?? "", argv[2] ?? "", Number(argv[3]));
    process.exit(0);
  }
  const rounds = option("--rounds", 40);
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
    result = await measure(endpoint, modelUrl, rounds);
  } finally {
    await receiver.close();
    await model.close();
  }
  const names = new Map<string, number>();
  for (const span of receiver.spans) names.set(span.name, (names.get(span.name) ?? 0) + 1);
  const onOff = result.on.map((on, i) => on / result.off[i]!);
  const aa = result.again.map((again, i) => again / result.off[i]!);
  const ratio = quantile(onOff, 0.5);
  const fmt = (n: number) => n.toFixed(3);
  const ms = (values: number[]) => `${(quantile(values, 0.5) / 1000).toFixed(3)} ms`;
  console.log(
    `\ntracing cost (${rounds} rounds of ${BATCH} runs × ${TURNS} turns per mode, interleaved; load ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}; ${receiver.spans.length} spans received)`,
  );
  console.log(
    `CPU per turn (median of rounds): off ${ms(result.off)}, off again ${ms(result.again)}, on ${ms(result.on)}`,
  );
  console.log(
    `A/A again/off: median ${fmt(quantile(aa, 0.5))}, spread p25–p75 ${fmt(quantile(aa, 0.25))}–${fmt(quantile(aa, 0.75))}`,
  );
  console.log(
    `on/off:        median ${fmt(ratio)}, spread p25–p75 ${fmt(quantile(onOff, 0.25))}–${fmt(quantile(onOff, 0.75))}`,
  );
  console.log(`spans by name: ${[...names].map(([name, n]) => `${name} ${n}`).join(", ")}`);
  console.log(`target median on/off ≤ 1.02: ${ratio <= 1.02 ? "PASS" : "FAIL"} (${fmt(ratio)})`);
  process.exit(0);
}

/** The `q` quantile of `values` (linear between the two nearest ranks). */
function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const at = (sorted.length - 1) * q;
  const low = Math.floor(at);
  const high = Math.ceil(at);
  return sorted[low]! + (sorted[high]! - sorted[low]!) * (at - low);
}

void main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
