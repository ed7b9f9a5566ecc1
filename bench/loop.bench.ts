/**
 * Agent-loop overhead: Threadline's core (src/agent) against pi-agent-core 0.73.1, side by side in one run.
 *
 * Both libraries run their own `Agent` class, driven by an equivalent instant in-process fake model (every
 * provider event is pushed synchronously into the library's own assistant-message event stream) and one
 * trivial tool (zod schema for ours, TypeBox for pi). One subscribed listener counts events and times
 * each turn from `turn_start` to `turn_end`. So what is measured is the loop itself: event fan-out, state
 * reduction, context conversion, validation and tool bookkeeping.
 *
 * Each (library, scenario) pair runs in a fresh child process (the script re-invokes itself with
 * `--child <lib> <scenario>`), so peak RSS is attributable and neither library warms the JIT for the
 * other. Children alternate ours/pi and pi/ours over the rounds (several short rounds rather than one
 * long one, so drifting machine load hits both libraries alike). Every child does warm-up runs first,
 * then measured runs; the table shows medians over all measured runs of all children.
 *
 *   npm run bench:loop                       all scenarios
 *   npm run bench:loop -- --only b,c50k      a subset
 *   npm run bench:loop -- --rounds 1         fewer children (quicker, noisier)
 *   npm run bench:loop -- --ours-source tsx  ours from TS via tsx (default: transpiled to JS, like pi)
 *   LOOP_BENCH_PROFILE_DIR=/tmp/prof npm run bench:loop -- --rounds 1    CPU profiles of the measured runs
 *   node --import tsx bench/loop.bench.ts --child ours a                   one child, JSON on stdout
 */
import { spawnSync } from "node:child_process";
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { AgentTool as PiAgentTool, StreamFn as PiStreamFn } from "@mariozechner/pi-agent-core";
import type { Model as PiModel } from "@mariozechner/pi-ai";
import type {
  AgentTool,
  AssistantMessage,
  AssistantMessageEvent,
  Message,
  StreamFn,
  ToolCall,
} from "../src/agent/index.js";

// ---------------------------------------------------------------------------
// Scenarios
// ---------------------------------------------------------------------------

type Lib = "ours" | "pi";
const LIBS: readonly Lib[] = ["ours", "pi"];

interface Scenario {
  id: string;
  label: string;
  /** Turns that answer with tool calls; one final text turn follows. */
  toolTurns: number;
  callsPerTurn: number;
  /** Transcript messages in the Agent's initial state. */
  seed: number;
  warmups: number;
  reps: number;
}

// biome-ignore format: a table reads better aligned.
const SCENARIOS: readonly Scenario[] = [
  //              id      label                         tool turns  calls  seed     warm-ups  runs
  defineScenario("a",    "(a) 1,000 one-tool turns",   1000,       1,     0,       4,        5),
  defineScenario("b",    "(b) 32-call batch ×200",     200,        32,    0,       4,        5),
  defineScenario("c0",   "(c) 200 turns, seed 0",      200,        1,     0,       12,       8),
  defineScenario("c2k",  "(c) 200 turns, seed 2k",     200,        1,     2_000,   10,       8),
  defineScenario("c10k", "(c) 200 turns, seed 10k",    200,        1,     10_000,  6,        6),
  defineScenario("c50k", "(c) 200 turns, seed 50k",    200,        1,     50_000,  3,        5),
];

function defineScenario(
  id: string,
  label: string,
  toolTurns: number,
  callsPerTurn: number,
  seed: number,
  warmups: number,
  reps: number,
): Scenario {
  return { id, label, toolTurns, callsPerTurn, seed, warmups, reps };
}

/** Wall-clock limit of one child process. */
const CHILD_TIMEOUT_MS = 60_000;

// ---------------------------------------------------------------------------
// The fake model, shared by both libraries (each pushes into its own stream class)
// ---------------------------------------------------------------------------

const MODEL: PiModel<"fake"> = {
  id: "fake",
  name: "Fake",
  api: "fake",
  provider: "fake",
  baseUrl: "",
  reasoning: false,
  input: ["text"],
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
  contextWindow: 1_000_000,
  maxTokens: 8_192,
};

function zeroUsage(): AssistantMessage["usage"] {
  return {
    input: 0,
    output: 0,
    cacheRead: 0,
    cacheWrite: 0,
    totalTokens: 0,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
  };
}

function newAssistantMessage(): AssistantMessage {
  return {
    role: "assistant",
    content: [],
    api: MODEL.api,
    provider: MODEL.provider,
    model: MODEL.id,
    usage: zeroUsage(),
    stopReason: "stop",
    timestamp: Date.now(),
  };
}

/**
 * Pushes one complete response the way a provider does: one live `partial` that grows, the same object
 * as the final message. Request `index` < `toolTurns` answers with `callsPerTurn` tool calls, later
 * requests with a short text.
 */
function emitResponse(push: (event: AssistantMessageEvent) => void, index: number, scenario: Scenario): void {
  const partial = newAssistantMessage();
  push({ type: "start", partial });
  if (index < scenario.toolTurns) {
    for (let i = 0; i < scenario.callsPerTurn; i++) {
      const toolCall: ToolCall = {
        type: "toolCall",
        id: `call_${index}_${i}`,
        name: "read_file",
        arguments: { path: `src/file-${i}.ts`, limit: 40 },
      };
      const contentIndex = partial.content.length;
      partial.content.push(toolCall);
      push({ type: "toolcall_start", contentIndex, partial });
      push({ type: "toolcall_delta", contentIndex, delta: JSON.stringify(toolCall.arguments), partial });
      push({ type: "toolcall_end", contentIndex, toolCall, partial });
    }
    partial.stopReason = "toolUse";
    push({ type: "done", reason: "toolUse", message: partial });
    return;
  }
  const block = { type: "text" as const, text: "" };
  partial.content.push(block);
  push({ type: "text_start", contentIndex: 0, partial });
  block.text = "All files read.";
  push({ type: "text_delta", contentIndex: 0, delta: block.text, partial });
  push({ type: "text_end", contentIndex: 0, content: block.text, partial });
  push({ type: "done", reason: "stop", message: partial });
}

/** `count` realistic transcript messages: user → assistant(text + tool call) → toolResult, repeated. */
function seedTranscript(count: number): Message[] {
  const messages: Message[] = [];
  for (let i = 0; messages.length < count; i++) {
    messages.push({
      role: "user",
      content: [{ type: "text", text: `Please look at module ${i} and summarise what it exports.` }],
      timestamp: 1_700_000_000_000 + i,
    });
    if (messages.length === count) break;
    messages.push({
      ...newAssistantMessage(),
      content: [
        { type: "text", text: `Reading module ${i}.` },
        { type: "toolCall", id: `seed_${i}`, name: "read_file", arguments: { path: `src/m${i}.ts` } },
      ],
      stopReason: "toolUse",
    });
    if (messages.length === count) break;
    messages.push({
      role: "toolResult",
      toolCallId: `seed_${i}`,
      toolName: "read_file",
      content: [{ type: "text", text: `export function m${i}(): number {\n  return ${i};\n}\n` }],
      details: { bytes: 40 },
      isError: false,
      timestamp: 1_700_000_000_000 + i,
    });
  }
  return messages;
}

function toolResultContent(path: string): { type: "text"; text: string }[] {
  return [{ type: "text", text: `contents of ${path}` }];
}

// ---------------------------------------------------------------------------
// One run of one library (child process side)
// ---------------------------------------------------------------------------

interface RunStats {
  wallMs: number;
  /** User + system CPU time of the process (GC helper threads included); immune to preemption. */
  cpuMs: number;
  turns: number;
  events: number;
  /** Median of the per-turn turn_start → turn_end durations, µs. */
  turnP50Us: number;
}

/**
 * The subscribed listener: counts events and times turns. It does not sample RSS (a `/proc` read inside
 * the loop would distort the timings); the child reports the kernel's max-RSS high-water mark instead.
 */
class Probe {
  events = 0;
  turns = 0;
  private turnStart = 0;
  readonly durations: Float64Array;

  constructor(maxTurns: number) {
    this.durations = new Float64Array(maxTurns);
  }

  readonly listener = (event: { type: string }): void => {
    this.events++;
    if (event.type === "turn_start") {
      this.turnStart = performance.now();
    } else if (event.type === "turn_end") {
      this.durations[this.turns++] = performance.now() - this.turnStart;
    }
  };
}

/** Builds a fresh Agent of one library. Only that library is imported, so the child's RSS is its own. */
type AgentFactory = (scenario: Scenario, seed: Message[]) => Driven;

interface Driven {
  subscribe(listener: (event: { type: string }) => void): unknown;
  prompt(text: string): Promise<void>;
  readonly state: { readonly messages: readonly unknown[] };
}

/** `compiledDir`: our core transpiled to plain JS (see {@link transpileOurs}); else the TS source via tsx. */
async function loadOurs(compiledDir: string | undefined): Promise<AgentFactory> {
  type Core = typeof import("../src/agent/index.js");
  const core: Core = compiledDir
    ? await import(pathToFileURL(join(compiledDir, "agent", "index.js")).href)
    : await import("../src/agent/index.js");
  const { Agent, createAssistantMessageEventStream } = core;
  if (compiledDir && String(createAssistantMessageEventStream).includes("__name")) {
    throw new Error("the transpiled core went through tsx's esbuild transform");
  }
  const { z: zod } = await import("zod");
  const parameters = zod.object({ path: zod.string(), limit: zod.number().optional() });
  const tool: AgentTool<typeof parameters> = readFileTool(parameters);
  return agentFactory(createAssistantMessageEventStream, (streamFn: StreamFn, seed) => {
    return new Agent({ initialState: { model: MODEL, tools: [tool], messages: seed }, streamFn });
  });
}

async function loadPi(): Promise<AgentFactory> {
  const { Agent } = await import("@mariozechner/pi-agent-core");
  const { createAssistantMessageEventStream, Type } = await import("@mariozechner/pi-ai");
  const parameters = Type.Object({ path: Type.String(), limit: Type.Optional(Type.Number()) });
  const tool: PiAgentTool<typeof parameters> = readFileTool(parameters);
  return agentFactory(createAssistantMessageEventStream, (streamFn: PiStreamFn, seed) => {
    return new Agent({ initialState: { model: MODEL, tools: [tool], messages: seed }, streamFn });
  });
}

/** The one trivial tool, alike for both libraries but for its schema (zod for ours, TypeBox for pi). */
function readFileTool<Parameters>(parameters: Parameters) {
  return {
    name: "read_file",
    label: "Read file",
    description: "Reads a file.",
    parameters,
    execute: async (_id: string, params: { path: string }) => ({
      content: toolResultContent(params.path),
      details: {},
    }),
  };
}

/**
 * An {@link AgentFactory} from a library's own event stream and `Agent`: each Agent's stream function
 * answers request `n` of the scenario with {@link emitResponse}, pushed synchronously into a new stream.
 */
function agentFactory<Stream extends { push(event: AssistantMessageEvent): void }, Fn>(
  newStream: () => Stream,
  newAgent: (streamFn: Fn, seed: Message[]) => Driven,
): AgentFactory {
  return (scenario, seed) => {
    let requests = 0;
    const streamFn = () => {
      const stream = newStream();
      emitResponse((event) => stream.push(event), requests++, scenario);
      return stream;
    };
    return newAgent(streamFn as Fn, seed);
  };
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((x, y) => x - y);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

async function runOnce(
  lib: Lib,
  create: AgentFactory,
  scenario: Scenario,
  seed: Message[],
): Promise<RunStats> {
  const agent = create(scenario, seed);
  const probe = new Probe(scenario.toolTurns + 1);
  agent.subscribe(probe.listener);
  const cpuStart = process.cpuUsage();
  const started = performance.now();
  await agent.prompt("Read every file and report.");
  const wallMs = performance.now() - started;
  const cpu = process.cpuUsage(cpuStart);
  const expected = seed.length + 1 + scenario.toolTurns * (1 + scenario.callsPerTurn) + 1;
  if (agent.state.messages.length !== expected || probe.turns !== scenario.toolTurns + 1) {
    throw new Error(
      `${lib}/${scenario.id}: ${agent.state.messages.length} messages / ${probe.turns} turns, expected ${expected} / ${scenario.toolTurns + 1}`,
    );
  }
  return {
    wallMs,
    cpuMs: (cpu.user + cpu.system) / 1000,
    turns: probe.turns,
    events: probe.events,
    turnP50Us: median(Array.from(probe.durations.subarray(0, probe.turns))) * 1000,
  };
}

interface ChildReport {
  lib: Lib;
  scenario: string;
  rssBase: number;
  rssPeak: number;
  runs: RunStats[];
}

async function child(lib: Lib, scenarioId: string, compiledDir: string | undefined): Promise<void> {
  const scenario = SCENARIOS.find((s) => s.id === scenarioId);
  if (!scenario) throw new Error(`unknown scenario ${scenarioId}`);
  const create = lib === "ours" ? await loadOurs(compiledDir) : await loadPi();
  const rssBase = process.memoryUsage.rss();
  const seed = seedTranscript(scenario.seed);
  for (let i = 0; i < scenario.warmups; i++) await runOnce(lib, create, scenario, seed);
  const profileDir = process.env.LOOP_BENCH_PROFILE_DIR;
  // The measured runs only, for `LOOP_BENCH_PROFILE_DIR=/tmp/prof npm run bench:loop -- --rounds 1`; loaded
  // on demand so an unprofiled child's RSS does not include the inspector.
  const profile = profileDir ? await (await import("./support/profile.js")).startCpuProfile(50) : undefined;
  const runs: RunStats[] = [];
  // No forced GC between runs: a full `gc()` makes V8 drop optimized code and the next run re-warms.
  for (let i = 0; i < scenario.reps; i++) runs.push(await runOnce(lib, create, scenario, seed));
  await profile?.stop(`${profileDir}/${lib}-${scenario.id}.cpuprofile`);
  const report: ChildReport = {
    lib,
    scenario: scenario.id,
    rssBase,
    rssPeak: Math.max(process.memoryUsage.rss(), process.resourceUsage().maxRSS * 1024),
    runs,
  };
  process.stdout.write(`${JSON.stringify(report)}\n`);
}

// ---------------------------------------------------------------------------
// Parent: spawn children, aggregate, print
// ---------------------------------------------------------------------------

/**
 * pi runs from its published JS; ours must too, for a fair comparison. Under tsx our TS (and any JS
 * outside node_modules) is compiled by esbuild with `keepNames`, which wraps every named closure in a
 * `__name()` → `Object.defineProperty` call: about a tenth of a one-tool turn. So the parent transpiles
 * src/agent with TypeScript (as `npm run build` would, minus type checking) into a temp package that
 * sits in a `node_modules` folder (tsx leaves those alone) next to a link to our zod.
 * Returns the package directory; the caller removes `dirname(dirname(dir))`.
 */
async function transpileOurs(): Promise<string> {
  const ts = (await import("typescript")).default;
  const root = fileURLToPath(new URL("..", import.meta.url));
  const sourceDir = join(root, "src", "agent");
  const modules = join(mkdtempSync(join(tmpdir(), "threadline-loop-bench-")), "node_modules");
  const packageDir = join(modules, "threadline-agent");
  mkdirSync(packageDir, { recursive: true });
  symlinkSync(join(root, "node_modules", "zod"), join(modules, "zod"), "dir");
  writeFileSync(join(packageDir, "package.json"), '{ "type": "module" }\n');
  for (const entry of readdirSync(sourceDir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith(".ts")) continue;
    const file = join(entry.parentPath, entry.name);
    const { outputText } = ts.transpileModule(readFileSync(file, "utf8"), {
      fileName: file,
      compilerOptions: {
        target: ts.ScriptTarget.ES2022,
        module: ts.ModuleKind.ESNext,
        verbatimModuleSyntax: true,
      },
    });
    const target = join(packageDir, "agent", relative(sourceDir, file).replace(/\.ts$/, ".js"));
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, outputText);
  }
  return packageDir;
}

function spawnChild(lib: Lib, scenario: Scenario, compiledDir: string | undefined): ChildReport {
  const script = fileURLToPath(import.meta.url);
  const result = spawnSync(
    process.execPath,
    [
      ...process.execArgv,
      script,
      "--child",
      lib,
      scenario.id,
      ...(compiledDir && lib === "ours" ? ["--compiled", compiledDir] : []),
    ],
    { encoding: "utf8", timeout: CHILD_TIMEOUT_MS, maxBuffer: 16 * 1024 * 1024 },
  );
  if (result.status !== 0) {
    throw new Error(
      `child ${lib}/${scenario.id} failed (${result.status ?? result.signal}):\n${result.stderr}`,
    );
  }
  const line = result.stdout.trim().split("\n").pop() ?? "";
  return JSON.parse(line) as ChildReport;
}

interface Summary {
  turnP50Us: number;
  cpuUsPerTurn: number;
  wallUsPerTurn: number;
  usPerTool: number;
  eventsPerSec: number;
  eventsPerRun: number;
  spreadPct: number;
  rssBaseMb: number;
  rssPeakMb: number;
  /** Peak minus base: what the scenario itself added on top of the loaded modules. */
  rssGrowthMb: number;
  samples: number;
}

function summarise(reports: ChildReport[], scenario: Scenario): Summary {
  const runs = reports.flatMap((report) => report.runs);
  const walls = runs.map((run) => run.wallMs);
  const wallMedian = median(walls);
  const mb = (bytes: number) => bytes / 1024 / 1024;
  return {
    turnP50Us: median(runs.map((run) => run.turnP50Us)),
    cpuUsPerTurn: median(runs.map((run) => (run.cpuMs * 1000) / run.turns)),
    wallUsPerTurn: median(runs.map((run) => (run.wallMs * 1000) / run.turns)),
    usPerTool: median(runs.map((run) => (run.cpuMs * 1000) / (scenario.toolTurns * scenario.callsPerTurn))),
    eventsPerSec: median(runs.map((run) => run.events / (run.wallMs / 1000))),
    eventsPerRun: median(runs.map((run) => run.events)),
    spreadPct: ((Math.max(...walls) - Math.min(...walls)) / wallMedian) * 100,
    rssBaseMb: median(reports.map((report) => mb(report.rssBase))),
    rssPeakMb: Math.max(...reports.map((report) => mb(report.rssPeak))),
    rssGrowthMb: median(reports.map((report) => mb(report.rssPeak - report.rssBase))),
    samples: runs.length,
  };
}

const fmt = (value: number, digits = 1) =>
  value.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });
const ratio = (ours: number, pi: number) => `${(ours / pi).toFixed(2)}${ours / pi <= 1 ? "" : " ⚠"}`;

interface Args {
  only: Set<string> | undefined;
  rounds: number;
  /** `js` (default): ours transpiled to plain JS like pi's dist; `tsx`: ours straight from TS via tsx. */
  oursSource: "js" | "tsx";
}

function parseArgs(argv: string[]): Args {
  const args: Args = { only: undefined, rounds: 3, oursSource: "js" };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--only") args.only = new Set((argv[++i] ?? "").split(","));
    else if (argv[i] === "--rounds") args.rounds = Math.max(1, Number(argv[++i]) || 1);
    else if (argv[i] === "--ours-source") args.oursSource = argv[++i] === "tsx" ? "tsx" : "js";
  }
  return args;
}

async function parent(): Promise<void> {
  const { only, rounds, oursSource } = parseArgs(process.argv.slice(2));
  const scenarios = SCENARIOS.filter((s) => !only || only.has(s.id));
  const started = performance.now();
  const loadBefore = loadavg()[0] ?? 0;
  const compiledDir = oursSource === "js" ? await transpileOurs() : undefined;
  const results = new Map<string, Record<Lib, Summary>>();
  try {
    for (const scenario of scenarios) {
      const reports: Record<Lib, ChildReport[]> = { ours: [], pi: [] };
      for (let round = 0; round < rounds; round++) {
        for (const lib of round % 2 === 0 ? LIBS : [...LIBS].reverse()) {
          process.stderr.write(`  ${scenario.id} round ${round + 1}/${rounds}: ${lib}…\n`);
          reports[lib].push(spawnChild(lib, scenario, compiledDir));
        }
      }
      results.set(scenario.id, {
        ours: summarise(reports.ours, scenario),
        pi: summarise(reports.pi, scenario),
      });
    }
  } finally {
    if (compiledDir) rmSync(dirname(dirname(compiledDir)), { recursive: true, force: true });
  }

  const lines: string[] = [];
  lines.push(
    `## Agent loop: Threadline vs pi-agent-core 0.73.1 (Node ${process.version}, ${rounds} round(s) of fresh child processes per library; ours ${oursSource === "js" ? "transpiled to JS by TypeScript" : "run from TS via tsx"})`,
    "",
    `Load average (1 min) before/after: ${fmt(loadBefore, 2)} / ${fmt(loadavg()[0] ?? 0, 2)} on ${availableParallelism()} CPUs${Math.max(loadBefore, loadavg()[0] ?? 0) > availableParallelism() - 0.5 ? " — the machine was busy, expect noisy numbers" : ""}.`,
    "",
    "| scenario | lib | turn p50 µs | CPU µs/turn | wall µs/turn | CPU µs/tool | events/s | events/run | spread | samples | RSS base MB | RSS peak MB | RSS growth MB |",
    "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
  );
  for (const scenario of scenarios) {
    const summary = results.get(scenario.id)!;
    for (const lib of LIBS) {
      const s = summary[lib];
      lines.push(
        `| ${scenario.label} | ${lib} | ${fmt(s.turnP50Us)} | ${fmt(s.cpuUsPerTurn)} | ${fmt(s.wallUsPerTurn)} | ${fmt(s.usPerTool)} | ${fmt(s.eventsPerSec, 0)} | ${fmt(s.eventsPerRun, 0)} | ${fmt(s.spreadPct, 0)}% | ${s.samples} | ${fmt(s.rssBaseMb)} | ${fmt(s.rssPeakMb)} | ${fmt(s.rssGrowthMb)} |`,
      );
    }
  }
  lines.push(
    "",
    "### Ratio ours / pi (≤ 1.00 is the target; ⚠ marks a miss)",
    "",
    "| scenario | turn p50 | CPU per turn | wall per turn | CPU per tool | events/s (pi/ours) | RSS peak | RSS growth |",
    "|---|--:|--:|--:|--:|--:|--:|--:|",
  );
  for (const scenario of scenarios) {
    const { ours, pi } = results.get(scenario.id)!;
    lines.push(
      `| ${scenario.label} | ${ratio(ours.turnP50Us, pi.turnP50Us)} | ${ratio(ours.cpuUsPerTurn, pi.cpuUsPerTurn)} | ${ratio(ours.wallUsPerTurn, pi.wallUsPerTurn)} | ${ratio(ours.usPerTool, pi.usPerTool)} | ${ratio(pi.eventsPerSec, ours.eventsPerSec)} | ${ratio(ours.rssPeakMb, pi.rssPeakMb)} | ${ratio(ours.rssGrowthMb, pi.rssGrowthMb)} |`,
    );
  }
  const c0 = results.get("c0");
  const c50k = results.get("c50k");
  if (c0 && c50k) {
    lines.push(
      "",
      "### Flatness in transcript length (turn p50 at seed 50k minus seed 0, µs per 1k messages)",
      "",
    );
    for (const lib of LIBS) {
      const slope = (c50k[lib].turnP50Us - c0[lib].turnP50Us) / 50;
      lines.push(
        `- ${lib}: ${fmt(c0[lib].turnP50Us)} → ${fmt(c50k[lib].turnP50Us)} µs (${fmt(slope, 2)} µs per 1k messages)`,
      );
    }
  }
  lines.push(
    "",
    "turn p50 = median over runs of the per-run median turn_start→turn_end time (robust to preemption, excludes most GC);",
    "CPU = process user+system CPU time of prompt() / turns (includes GC threads, immune to preemption); wall = prompt() duration / turns;",
    "CPU per tool = CPU time / tool calls; events/s = events / wall; spread = (max − min) / median of run wall times; RSS base = after importing the library (tsx + zod for ours, pi-ai with its provider SDKs for pi);",
    "RSS peak = kernel max RSS of the child; growth = peak − base (median over children).",
    `Total bench time: ${fmt((performance.now() - started) / 1000)} s`,
  );
  process.stdout.write(`${lines.join("\n")}\n`);
}

const childIndex = process.argv.indexOf("--child");
if (childIndex >= 0) {
  const lib = process.argv[childIndex + 1];
  if (lib !== "ours" && lib !== "pi") throw new Error(`--child expects ours|pi, got ${lib}`);
  const compiledIndex = process.argv.indexOf("--compiled");
  await child(
    lib,
    process.argv[childIndex + 2] ?? "",
    compiledIndex >= 0 ? process.argv[compiledIndex + 1] : undefined,
  );
} else {
  await parent();
}
