/**
 * Runs on Redis and BullMQ (src/runs): handoff latencies from the gateway into a worker, streaming runs
 * held by one worker, and the memory of runs parked on approvals. Everything runs in one go on the local
 * Redis (REDIS_URL, default redis://127.0.0.1:6379) under a fresh key prefix that is deleted at the end
 * (also when a scenario fails or the 4-minute deadline fires).
 *
 * This script orchestrates, acts as the gateway of the streaming and parked scenarios, and re-invokes
 * itself as child processes (`--child <kind> <json>`), so that each measured worker's CPU and RSS are its
 * own:
 *   server   FakeOpenAIServer (test/fakes) for the whole run. The streaming model answers every turn with
 *            20 SSE chunks, one every 10 ms (200 ms), ending in a tool call (a final text on turn 10).
 *   latency  a gateway (Intake, own connections) + one run worker + a bare BullMQ queue/worker in one
 *            process, with an in-process instant model. One sample of each handoff per round, the order
 *            rotating every round (drifting load hits every metric alike), after warm-up rounds.
 *   bare     N concurrent plain node:http loops against the server, 10 sequential turns each: what the
 *            model alone takes per turn at that load (the baseline of the streaming scenario).
 *   stream   one run worker (BullMQ concurrency N) with createOpenAIStreamFn against the server,
 *            createConvertToLlm, an instant tool, rendering into one MemoryOutbound (recordOps off). The
 *            main process submits N runs of 10 turns at once. Warm-up runs first, then RSS/heap baseline.
 *   parked   one run worker; the main process submits 1,000 runs whose first tool call needs approval;
 *            RSS and heap beyond the warmed-up, collected baseline once every approval card is posted, and
 *            the stored transcript per run (the target counts RSS beyond it).
 *   scaleout (`--only scaleout`, or `--processes P`) P `stream` workers on the same queue, N runs each
 *            (`--per-process`, default 150), against 1 × N in the same run and the bare client at N; how
 *            the P × N runs are assigned and measured: bench/runs/scaleout.ts. Not in the default set.
 *
 * Measurement points (nothing in src/ is changed; every hook is a public seam):
 *   - processor begins: the worker's OutboundResolver, called once in the run session's constructor;
 *   - run starts: the first call of the stream function (the model request);
 *   - steering: `tlDrain` wrapped on the worker's Redis connection (scripts are looked up per call), so the
 *     handoff is the gateway's tlSubmit round trip + the worker's tlDrain call that returned the message,
 *     i.e. the critical path if the turn boundary comes right after the message was stored. The tool that
 *     blocks the run is released as soon as submit resolves; the rows after it show the rest of the way to
 *     the model request that contains the steering message;
 *   - approval: `Intake.decide` → the tool's `execute` (the card was posted, the gate is waiting);
 *   - streaming turn: from one model request of a run to its next one (stream, render, persist, tool,
 *     drain), compared with the bare client's turn at the same N in the same run, and with the nominal
 *     200 ms.
 *
 * The floor of the handoff ratios is one PING after a 2 ms pause (every handoff starts in a process that
 * was waiting for something); back-to-back PINGs are shown for reference. Targets are checked on p50/p99
 * and printed as PASS/FAIL; the streaming target is checked against the model alone at the same N
 * (Threadline's own share), with the literal "turn − 200 ms" shown beside it.
 *
 * The streaming targets (issue #17): added per turn ≤ 5 ms p50 / ≤ 50 ms p99 at 50 runs, ≤ 20 / ≤ 100 ms
 * above that; event-loop delay p99 ≤ 25 ms; CPU per turn ≤ 1.5× the bare client's.
 *
 * `npm run bench:runs` chains three scripts, and npm appends `-- …` arguments to the last one only: pass
 * options to this script directly.
 *
 *   npm run bench:runs
 *   npx tsx bench/runs.bench.ts --rounds 100 --ns 50,150 --parked 300     quicker, noisier
 *   npx tsx bench/runs.bench.ts --only stream --ns 150 --edit-interval 1000   one scenario, Slack-like throttle
 *   npx tsx bench/runs.bench.ts --only stream --ns 150 --profile /tmp/prof   CPU profile of the measured phase
 *   npx tsx bench/runs.bench.ts --only scaleout --processes 2 --edit-interval 1000   2 × 150 vs 1 × 150
 *   npx tsx bench/runs.bench.ts --only parked                        parked-approval memory alone
 *   RUNS_BENCH_PROFILE_DIR=/tmp/prof npm run bench:runs             whole-process CPU profiles of the children
 *
 * The parts live in `bench/runs/` (one file per child kind, the parent in `main.ts`, the report in
 * `report.ts`); the child protocol, profiling and statistics are shared by every bench (`bench/support/`).
 */
import { runChild } from "./runs/children.js";
import { main } from "./runs/main.js";
import type { ChildArgs } from "./runs/protocol.js";

const childIndex = process.argv.indexOf("--child");
if (childIndex >= 0) {
  const kind = process.argv[childIndex + 1] ?? "";
  await runChild(kind, JSON.parse(process.argv[childIndex + 2] ?? "{}") as ChildArgs);
} else {
  await main();
}
