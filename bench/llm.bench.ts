/**
 * Model-provider overhead: Threadline's OpenAI stream function (src/llm) against a bare `openai` SDK loop
 * over the same local chat-completions server, in the same run.
 *
 * The fake server (test/fakes/openai-server.ts) runs in a child process (this script re-invokes itself
 * with `--server`), so `process.cpuUsage()` in this process measures the client side only. The server
 * answers by model name with pre-serialized SSE replies: long text streams, tool-call streams split into
 * 8-character argument fragments, and tiny answers for the per-request cost.
 *
 * Every scenario alternates baseline and candidate samples over several rounds after warm-ups; each
 * sample is CPU time (user + system) over a batch of requests, divided by the units (chunks, fragments
 * or requests). The table shows medians and the ratio to the scenario's baseline.
 *
 *   npm run bench:llm
 *   npm run bench:llm -- --rounds 3        quicker, noisier
 */

import { fileURLToPath } from "node:url";
import OpenAI from "openai";
import { Agent } from "undici";
import type { AssistantMessageEvent, LlmContext, ToolCall } from "../src/agent/index.js";
import { createHttpFetch, createOpenAIStreamFn, type OpenAIFetch, openAIModel } from "../src/llm/index.js";
import { chunks, type FakeChunk, FakeOpenAIServer, type FakeReply } from "../test/fakes/openai-server.js";
import { Child, sendToParent } from "./support/child.js";
import { midpointMedian as median } from "./support/stats.js";

// ---------------------------------------------------------------------------
// Server side (child process)
// ---------------------------------------------------------------------------

/** Builds the reply a model name asks for: `text:<chunks>:<pacing>`, `tools:<calls>:<fragments>`, `small`. */
function replyFor(model: string): FakeReply {
  const [kind, a, b] = model.split(":");
  if (kind === "text") {
    const list: FakeChunk[] = [chunks.role()];
    for (let i = 0; i < Number(a); i++) list.push(chunks.text("tok "));
    list.push(chunks.finish("stop"), chunks.usage(100, Number(a)));
    return { kind: "stream", chunks: list, pacing: b === "immediate" ? "immediate" : "burst" };
  }
  if (kind === "tools") {
    const calls = Number(a);
    const fragments = Number(b);
    const list: FakeChunk[] = [chunks.role()];
    for (let call = 0; call < calls; call++) {
      // An argument object whose JSON is `fragments` × 8 characters long.
      const filler = "x".repeat(fragments * 8 - 12);
      const json = JSON.stringify({ content: filler });
      list.push(chunks.toolCall(call, { id: `call_${call}`, name: "write_file", arguments: "" }));
      for (let i = 0; i < json.length; i += 8)
        list.push(chunks.toolCall(call, { arguments: json.slice(i, i + 8) }));
    }
    list.push(chunks.finish("tool_calls"), chunks.usage(100, calls * fragments));
    return { kind: "stream", chunks: list };
  }
  return {
    kind: "stream",
    chunks: [chunks.role(), chunks.text("ok"), chunks.finish("stop"), chunks.usage(10, 1)],
  };
}

async function runServer(): Promise<void> {
  const server = await FakeOpenAIServer.start();
  const cache = new Map<string, FakeReply>();
  server.handler = (request) => {
    const model = String((request.body as { model?: unknown } | undefined)?.model ?? "small");
    let reply = cache.get(model);
    if (!reply) {
      reply = replyFor(model);
      cache.set(model, reply);
    }
    // Keep the request log from growing for the whole run.
    server.requests.length = 0;
    return reply;
  };
  sendToParent({ type: "ready", baseURL: server.baseURL });
  process.on("disconnect", () => void server.close().then(() => process.exit(0)));
}

// ---------------------------------------------------------------------------
// Client side
// ---------------------------------------------------------------------------

interface Variant {
  name: string;
  /** Name of the variant this one is compared with in the last ratio column. */
  vs?: string;
  /** Runs one request; returns the number of units it streamed (chunks or fragments). */
  run: (model: string) => Promise<number>;
}

const context: LlmContext = {
  systemPrompt: "You are a benchmark.",
  messages: [{ role: "user", content: "go", timestamp: 0 }],
};

function bareSdk(baseURL: string, fetchImpl?: OpenAIFetch): Variant["run"] {
  const client = new OpenAI({
    baseURL,
    apiKey: "sk-bench",
    maxRetries: 0,
    ...(fetchImpl ? { fetch: fetchImpl } : {}),
  });
  return async (model) => {
    const stream = await client.chat.completions.create({
      model,
      messages: [
        { role: "system", content: "You are a benchmark." },
        { role: "user", content: "go" },
      ],
      stream: true,
      stream_options: { include_usage: true },
    });
    let units = 0;
    let text = "";
    const args: string[] = [];
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta;
      if (delta?.content) {
        text += delta.content;
        units++;
      }
      for (const call of delta?.tool_calls ?? []) {
        const fragment = call.function?.arguments;
        if (fragment) {
          args[call.index] = (args[call.index] ?? "") + fragment;
          units++;
        }
      }
    }
    return text.length >= 0 ? units : 0;
  };
}

function adapter(
  baseURL: string,
  options: { fetch?: OpenAIFetch; readArguments?: boolean } = {},
): Variant["run"] {
  const streamFn = createOpenAIStreamFn({
    apiKey: "sk-bench",
    maxRetries: 0,
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
  return async (model) => {
    const stream = await streamFn(openAIModel({ id: model, baseUrl: baseURL }), context, {});
    let units = 0;
    let keys = 0;
    for await (const event of stream as AsyncIterable<AssistantMessageEvent>) {
      if (event.type === "text_delta") units++;
      else if (event.type === "toolcall_delta") {
        units++;
        if (options.readArguments) {
          keys += Object.keys((event.partial.content[event.contentIndex] as ToolCall).arguments).length;
        }
      }
    }
    const message = await stream.result();
    if (message.stopReason === "error") throw new Error(message.errorMessage);
    return keys >= 0 ? units : 0;
  };
}

function cpuMicros(): number {
  const usage = process.cpuUsage();
  return usage.user + usage.system;
}

interface Sample {
  cpuPerUnit: number;
  wallMs: number;
}

async function sample(
  variant: Variant,
  model: string,
  requests: number,
  concurrency: number,
  perRequest: boolean,
) {
  const startCpu = cpuMicros();
  const startWall = performance.now();
  let units = 0;
  let next = 0;
  const worker = async () => {
    while (next < requests) {
      next++;
      units += await variant.run(model);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const cpu = cpuMicros() - startCpu;
  return { cpuPerUnit: cpu / (perRequest ? requests : units), wallMs: performance.now() - startWall };
}

interface Scenario {
  label: string;
  unit: string;
  model: string;
  requests: number;
  concurrency?: number;
  perRequest?: boolean;
  variants: Variant[];
}

/** Runs a scenario; returns table rows (ratios to the first variant and to the variant named in `vs`). */
async function measure(scenario: Scenario, rounds: number): Promise<string[]> {
  const results = new Map<string, Sample[]>();
  const concurrency = scenario.concurrency ?? 1;
  const perRequest = scenario.perRequest ?? false;
  for (let round = -2; round < rounds; round++) {
    const order = round % 2 === 0 ? scenario.variants : [...scenario.variants].reverse();
    for (const variant of order) {
      const result = await sample(variant, scenario.model, scenario.requests, concurrency, perRequest);
      if (round < 0) continue;
      const list = results.get(variant.name) ?? [];
      list.push(result);
      results.set(variant.name, list);
    }
  }
  const cpuOf = (name: string | undefined) =>
    median((results.get(name ?? "") ?? []).map((s) => s.cpuPerUnit));
  const first = cpuOf(scenario.variants[0]?.name);
  return scenario.variants.map((variant) => {
    const samples = results.get(variant.name) ?? [];
    const cpu = median(samples.map((s) => s.cpuPerUnit));
    const wall = median(samples.map((s) => s.wallMs));
    const vs = variant.vs ? `${(cpu / cpuOf(variant.vs)).toFixed(2)}×` : "";
    return `| ${scenario.label} | ${variant.name} | ${cpu.toFixed(2)} µs/${scenario.unit} | ${(cpu / first).toFixed(2)}× | ${vs} | ${wall.toFixed(0)} ms |`;
  });
}

async function startServerProcess(): Promise<{ child: Child; baseURL: string }> {
  const child = new Child("server", fileURLToPath(import.meta.url), ["--server"]);
  const { baseURL } = await child.next("ready", 60_000);
  if (!baseURL) throw new Error("the server process sent no baseURL");
  return { child, baseURL };
}

async function main(): Promise<void> {
  const roundsArg = process.argv.indexOf("--rounds");
  const rounds = roundsArg >= 0 ? Number(process.argv[roundsArg + 1]) : 7;
  const { child, baseURL } = await startServerProcess();
  const globalFetch: OpenAIFetch = globalThis.fetch;
  // The stream function's default fetch: undici over a keep-alive Agent.
  const nodeFetch = createHttpFetch();
  // undici's `pipelining: 0` closes the connection after every response.
  const nodeFetchNoKeepAlive = createHttpFetch({ dispatcher: new Agent({ pipelining: 0 }) });

  const BARE_GLOBAL = "bare SDK loop, global fetch";
  const BARE_NODE = "bare SDK loop, undici Agent fetch";
  const bareGlobal: Variant = { name: BARE_GLOBAL, run: bareSdk(baseURL, globalFetch) };
  const bareNode: Variant = { name: BARE_NODE, run: bareSdk(baseURL, nodeFetch) };
  const fnGlobal: Variant = {
    name: "stream fn, global fetch",
    run: adapter(baseURL, { fetch: globalFetch }),
    vs: BARE_GLOBAL,
  };
  const fnDefault: Variant = {
    name: "stream fn, default (undici Agent fetch)",
    run: adapter(baseURL),
    vs: BARE_NODE,
  };

  const scenarios: Scenario[] = [
    {
      label: "text, 2,000 chunks, burst",
      unit: "chunk",
      model: "text:2000:burst",
      requests: 10,
      variants: [bareGlobal, fnGlobal, bareNode, fnDefault],
    },
    {
      label: "text, 500 chunks, one per tick",
      unit: "chunk",
      model: "text:500:immediate",
      requests: 10,
      variants: [bareGlobal, fnGlobal, bareNode, fnDefault],
    },
    {
      label: "4 tool calls × 250 fragments",
      unit: "fragment",
      model: "tools:4:250",
      requests: 10,
      variants: [
        bareGlobal,
        fnGlobal,
        bareNode,
        fnDefault,
        {
          name: "stream fn, default, consumer reads `arguments` at every delta",
          run: adapter(baseURL, { readArguments: true }),
          vs: BARE_NODE,
        },
      ],
    },
    {
      label: "tiny answers, sequential",
      unit: "request",
      model: "small",
      requests: 300,
      perRequest: true,
      variants: [
        { ...bareGlobal, name: `${BARE_GLOBAL} (undici keep-alive)` },
        {
          ...fnGlobal,
          name: "stream fn, global fetch (undici keep-alive)",
          vs: `${BARE_GLOBAL} (undici keep-alive)`,
        },
        {
          name: "stream fn, undici Agent fetch without keep-alive",
          run: adapter(baseURL, { fetch: nodeFetchNoKeepAlive }),
        },
        { ...bareNode, name: `${BARE_NODE} (keep-alive)` },
        {
          ...fnDefault,
          name: "stream fn, default (undici Agent keep-alive)",
          vs: `${BARE_NODE} (keep-alive)`,
        },
      ],
    },
    {
      label: "tiny answers, 16 concurrent",
      unit: "request",
      model: "small",
      requests: 400,
      concurrency: 16,
      perRequest: true,
      variants: [
        {
          name: "stream fn, global fetch (undici keep-alive)",
          run: adapter(baseURL, { fetch: globalFetch }),
        },
        { name: "stream fn, default (undici Agent keep-alive)", run: adapter(baseURL) },
      ],
    },
  ];

  console.log(
    `node ${process.version}, ${rounds} rounds (+2 warm-up), medians of CPU (user+system) in this process;`,
  );
  console.log(
    "the server runs in a child process. Target: stream fn ≤ 1.3× the bare loop with the same fetch.\n",
  );
  console.log("| scenario | variant | CPU | vs first row | vs bare loop, same fetch | wall per sample |");
  console.log("| --- | --- | --- | --- | --- | --- |");
  for (const scenario of scenarios) {
    for (const line of await measure(scenario, rounds)) console.log(line);
  }
  nodeFetch.destroy();
  nodeFetchNoKeepAlive.destroy();
  child.process.disconnect();
}

if (process.argv.includes("--server")) {
  await runServer();
} else {
  await main();
}
