/**
 * What tracing costs per turn: CPU time of a worker process (gateway Intake + one run worker, as the
 * RunsHarness builds them, on the local Redis) per agent turn, tracing off (the API's no-ops) vs on (the SDK
 * exporting every span as OTLP/HTTP JSON to a receiver in this parent process, whose CPU is not counted).
 * One child process alternates batches of 20 runs between the modes (order rotating every round, after
 * warm-up batches), so drifting machine load and JIT state hit all alike; a second "off" batch per round
 * gives an A/A ratio, the noise floor the on/off ratio must be read against. Each run has 5 turns (4 with an
 * instant tool call, then a text answer) from the OpenAI client against FakeOpenAIServer (in this parent; 20
 * SSE text chunks a turn). Cost accounting is on in both (a price table), so the ratio is tracing's own share.
 * Target: ≤ 1.02 (2 % CPU per turn). Run by `npm run bench:runs`, or alone:
 * `npx tsx bench/tracing.bench.ts [--rounds 10]`.
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
const BATCH = 20;

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
  // "again" is a second "off": the A/A ratio off/again is the noise floor of this machine right now.
  const used = { on: 0, off: 0, again: 0 };
  let next = 0;
  const batch = async (mode: "on" | "off" | "again", measured: boolean) => {
    if (mode === "on") trace.setGlobalTracerProvider(provider);
    else trace.disable();
    const before = process.cpuUsage();
    await runBatch(h, next);
    next += BATCH;
    if (mode === "on") await tracing?.flush();
    const delta = process.cpuUsage(before);
    if (measured) used[mode] += delta.user + delta.system;
  };
  try {
    for (let i = 0; i < 2; i++) {
      await batch("off", false);
      await batch("on", false);
    }
    for (let i = 0; i < rounds; i++) {
      const orders: ("on" | "off" | "again")[][] = [
        ["off", "on", "again"],
        ["on", "again", "off"],
        ["again", "off", "on"],
      ];
      const order = orders[i % orders.length]!;
      for (const mode of order) await batch(mode, true);
    }
    const turns = rounds * BATCH * TURNS;
    process.send?.({ on: used.on / turns, off: used.off / turns, again: used.again / turns });
  } finally {
    trace.setGlobalTracerProvider(provider);
    await h.close();
    await tracing?.shutdown();
  }
}

function measure(
  endpoint: string,
  modelUrl: string,
  rounds: number,
): Promise<{ on: number; off: number; again: number }> {
  return new Promise((resolve, reject) => {
    const proc = fork(fileURLToPath(import.meta.url), ["--child", endpoint, modelUrl, String(rounds)], {
      execArgv: process.execArgv,
    });
    proc.on("message", (message: { on: number; off: number; again: number }) => resolve(message));
    proc.on("exit", (code) => (code === 0 ? undefined : reject(new Error(`child exited ${code}`))));
  });
}

async function main(): Promise<void> {
  if (argv[0] === "--child") {
    await child(argv[1] ?? "", argv[2] ?? "", Number(argv[3]));
    process.exit(0);
  }
  const rounds = option("--rounds", 10);
  const receiver = new OtlpReceiver();
  const endpoint = await receiver.start();
  const model = await FakeOpenAIServer.start();
  model.handler = (request) => {
    model.requests.length = 0; // the log would grow for the whole run
    const messages = (request.body as { messages?: { role?: string }[] } | undefined)?.messages ?? [];
    return reply(messages.filter((m) => m.role === "assistant").length);
  };
  const modelUrl = model.baseURL;
  let result: { on: number; off: number; again: number };
  try {
    result = await measure(endpoint, modelUrl, rounds);
  } finally {
    await receiver.close();
    await model.close();
  }
  const names = new Map<string, number>();
  for (const span of receiver.spans) names.set(span.name, (names.get(span.name) ?? 0) + 1);
  const off = (result.off + result.again) / 2;
  const ratio = result.on / off;
  console.log(
    `\ntracing cost (${rounds} rounds of ${BATCH} runs × ${TURNS} turns per mode, load ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}; ${receiver.spans.length} spans received)`,
  );
  console.log(
    `CPU per turn, tracing off   ${(off / 1000).toFixed(3)} ms   (A/A noise floor: ${(result.again / result.off).toFixed(3)})`,
  );
  console.log(`CPU per turn, tracing on    ${(result.on / 1000).toFixed(3)} ms`);
  console.log(`spans by name: ${[...names].map(([name, n]) => `${name} ${n}`).join(", ")}`);
  console.log(`target on/off ≤ 1.02: ${ratio <= 1.02 ? "PASS" : "FAIL"} (${ratio.toFixed(3)})`);
  process.exit(0);
}

void main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
