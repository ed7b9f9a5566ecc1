/**
 * Discord latency: what a user waits for, end to end, with the real processes.
 *
 * A local fake Discord (test/fakes/discord-server.ts: REST v10 with Discord's per-route and global rate
 * limits, gateway WebSocket) and a fake model (test/fakes/openai-server.ts) run in this process; the
 * real `threadline gateway` and `threadline worker` run as child processes against them and the local
 * Redis (REDIS_URL), under a fresh key prefix deleted at the end. Production settings: 1 s edit interval,
 * the Redis-shared REST budget of 50 requests/s.
 *
 * Per mention (a person mentions the bot in a text channel; the bot starts a thread and answers):
 *   ack         mention dispatched on the gateway → the 👀 reaction request reaches Discord
 *   first text  mention dispatched → the first reply message (streamed text) reaches Discord, minus the
 *               model's time to first token (the model answers after a fixed TTFT)
 * Scenarios (targets of issue #17 where it sets them):
 *   single       1 thread at a time (sequential mentions): ack p50 ≤ 10 ms, p99 ≤ 100 ms; first text
 *                overhead p99 ≤ 50 ms.
 *   concurrent   50 concurrent threads: 50 people in 50 channels, each mentioning again once their answer
 *                is complete, `--rounds` times; long streamed answers keep ~50 runs active at once;
 *                arrivals are staggered at the pace the global REST budget sustains. Ack p50 ≤ 10 ms,
 *                p99 ≤ 50 ms (issue #17; also p99 ≤ 100 ms); first text overhead p99 ≤ 50 ms; no 429.
 *   burst        50 new threads in one instant: 50 people mention the bot in 50 channels of their own at
 *                once (short answers). Ack p99 ≤ 100 ms (issue #17); no 429.
 * Baseline: one bare HTTP PUT to the same fake server (the floor of any acknowledgement), measured in the
 * same run.
 *
 *   npm run bench:discord
 *   npm run bench:discord -- --rounds 2 --sequential 10      quicker, noisier
 *   npm run bench:discord -- --only burst                    one scenario: single, concurrent or burst
 *   npm run bench:discord -- --verbose                       queue waits, warnings, the slowest mentions
 */
import http from "node:http";
import { parseArgs } from "node:util";
import { createRunQueue } from "../src/runs/index.js";
import { FakeDiscordServer } from "../test/fakes/discord-server.js";
import {
  chunk,
  chunks,
  type FakeChunk,
  FakeOpenAIServer,
  type FakeReply,
} from "../test/fakes/openai-server.js";
import { CliProcess } from "../test/support/process.js";
import { connect, deletePrefix, REDIS_URL, requireRedis, uniquePrefix } from "../test/support/redis.js";
import { percentile, verdict } from "./support/stats.js";

const { values: args } = parseArgs({
  options: {
    rounds: { type: "string", default: "3" },
    sequential: { type: "string", default: "20" },
    threads: { type: "string", default: "50" },
    verbose: { type: "boolean", default: false },
    only: { type: "string" },
  },
});
const SCENARIOS = ["single", "concurrent", "burst"] as const;
if (args.only !== undefined && !(SCENARIOS as readonly string[]).includes(args.only)) {
  throw new Error(`--only takes one of ${SCENARIOS.join(", ")}, not ${args.only}`);
}
/** Whether `scenario` runs (all of them unless `--only` names one). */
const runs = (scenario: (typeof SCENARIOS)[number]) => args.only === undefined || args.only === scenario;
const ROUNDS = Number(args.rounds);
const SEQUENTIAL = Number(args.sequential);
const THREADS = Number(args.threads);
/** The model's time to first token, and the pause between later chunks. */
const TTFT_MS = 100;
/** Mentions per second while 50 threads ramp up: what the global REST budget sustains. */
const ARRIVALS_PER_SECOND = 4;
const DEADLINE_MS = 5 * 60_000;

interface Sample {
  ack: number;
  firstText: number;
  /** Mention → the model request (gateway, queue, worker), for `--verbose`. */
  toModel: number;
  /** What reached Discord for this mention, relative to it (for `--verbose`). */
  timeline: string[];
}

/** A streamed answer: text from the first chunk on, one chunk every TTFT_MS, `pieces` chunks long. */
function answer(tag: string, pieces: number): FakeReply {
  const list: FakeChunk[] = [chunk({ role: "assistant", content: `[${tag}] Here` })];
  for (let i = 0; i < pieces; i++) list.push(chunks.text(` is part ${i} of a long and thoughtful answer.`));
  list.push(chunks.finish("stop"), chunks.usage(50, pieces * 8));
  return { kind: "stream", chunks: list, delayMs: TTFT_MS };
}

async function main(): Promise<void> {
  const started = Date.now();
  const redis = connect();
  await requireRedis(redis);
  const prefix = uniquePrefix("bench-discord");
  const discord = await FakeDiscordServer.start();
  const openai = await FakeOpenAIServer.start();
  const guild = discord.addGuild("Bench");
  const people = Array.from({ length: THREADS }, (_, i) =>
    discord.addUser(`Person${i}`, [{ guildId: guild }]),
  );
  const channels = Array.from({ length: THREADS + 1 }, (_, i) => discord.addChannel(guild, `bench-${i}`));
  const solo = Array.from({ length: SEQUENTIAL }, (_, i) => discord.addChannel(guild, `solo-${i}`));
  const burstChannels = Array.from({ length: THREADS }, (_, i) => discord.addChannel(guild, `burst-${i}`));
  const lengths = new Map<string, number>();
  const modelAt = new Map<string, number>();
  openai.handler = (request) => {
    // The probe asks GET /models (no body) first.
    const body = (request.body ?? {}) as { messages?: { role: string; content: unknown }[] };
    const first = JSON.stringify(body.messages?.find((message) => message.role === "user")?.content ?? "");
    const tag = /\[(b\d+)\]/.exec(first)?.[1] ?? "";
    if (!modelAt.has(tag)) modelAt.set(tag, performance.now());
    return answer(tag, lengths.get(tag) ?? 4);
  };
  const env = {
    DISCORD_TOKEN: discord.token,
    DISCORD_API_URL: discord.apiUrl,
    SLACK_BOT_TOKEN: "",
    SLACK_APP_TOKEN: "",
    SLACK_SIGNING_SECRET: "",
    OPS_PORT: "0",
    REDIS_URL,
    THREADLINE_PREFIX: prefix,
    OPENAI_BASE_URL: openai.baseURL,
    OPENAI_API_KEY: "sk-bench",
    OPENAI_MODEL: "fake-model",
    // Runs finishing under a saturated budget (their last edits are paced) still hold a slot for a while.
    WORKER_CONCURRENCY: "500",
    LOG_LEVEL: "warn",
  };
  const processes: CliProcess[] = [];
  const deadline = setTimeout(() => {
    process.stderr.write("bench: deadline reached\n");
    void cleanup().then(() => process.exit(1));
  }, DEADLINE_MS);
  async function cleanup(): Promise<void> {
    await Promise.all(processes.map((proc) => proc.stop()));
    await discord.close();
    await openai.close();
    await deletePrefix(redis, prefix);
    redis.disconnect();
  }

  try {
    const ready = { ...env, LOG_LEVEL: "info" };
    processes.push(
      ...(await Promise.all([
        CliProcess.start("worker", ready, "worker started", 60_000),
        CliProcess.start("gateway", ready, "gateway receiving events", 60_000),
      ])),
    );
    let seq = 0;
    /** One mention by `person` in `channel`; resolves with its sample once the run's final message is there. */
    const mention = async (
      channel: string,
      person: (typeof people)[number],
      pieces: number,
    ): Promise<Sample> => {
      const tag = `b${++seq}`;
      lengths.set(tag, pieces);
      const at = performance.now();
      const message = discord.say(channel, person, `[${tag}] tell me something`, { mention: true });
      const thread = message.id;
      const isAck = (r: { method: string; path: string }) =>
        r.method === "PUT" && r.path.startsWith(`/channels/${channel}/messages/${thread}/reactions/`);
      const isPost = (r: { method: string; path: string; status: number }) =>
        r.method === "POST" && r.path === `/channels/${thread}/messages` && r.status === 200;
      const done = () =>
        discord.botMessages(thread).some((m) => m.history.length === 1 && /-# \d+ turn/.test(m.content));
      await discord.waitFor(done);
      const ack = discord.requests.find(isAck);
      const post = discord.requests.find(isPost);
      if (!ack || !post) throw new Error(`bench: no acknowledgement or reply for ${tag}`);
      const timeline = discord.requests
        .filter((r) => r.hrAt >= at && (r.path.includes(thread) || r.path.includes(channel)))
        .map((r) => `+${(r.hrAt - at).toFixed(1)} ms ${r.method} ${r.template} ${r.status}`);
      timeline.unshift(`model request at +${((modelAt.get(tag) ?? Number.NaN) - at).toFixed(1)} ms`);
      const toModel = (modelAt.get(tag) ?? Number.NaN) - at;
      return { ack: ack.hrAt - at, firstText: post.hrAt - at - TTFT_MS, toModel, timeline };
    };

    // Warm-up (compiles, connects, fills discord.js and undici pools).
    for (let i = 0; i < 3; i++) await mention(channels[THREADS]!, people[0]!, 2);

    const baseline: number[] = [];
    const agent = new http.Agent({ keepAlive: true });
    // An unrouted path: answered before any rate limit, so the baseline does not use the bot's budget.
    const target = new URL(`${discord.apiUrl}/v10/baseline`);
    for (let i = 0; i < 200; i++) {
      const at = performance.now();
      await new Promise<void>((resolve, reject) => {
        const req = http.request(
          target,
          { agent, headers: { Authorization: `Bot ${discord.token}` } },
          (res) => {
            res.resume();
            res.on("end", () => resolve());
          },
        );
        req.on("error", reject);
        req.end();
      });
      baseline.push(performance.now() - at);
    }
    agent.destroy();

    const limitedSoFar = () => discord.requests.filter((r) => r.status === 429).length;
    const sequential: Sample[] = [];
    // One thread at a time, each in a channel of its own (Discord's per-channel limit on starting threads,
    // 5 per 5 s in the fake, is not what is measured).
    const single429Before = limitedSoFar();
    if (runs("single")) for (const channel of solo) sequential.push(await mention(channel, people[0]!, 4));
    const singleLimited = limitedSoFar() - single429Before;

    const concurrent: Sample[] = [];
    let limited = 0;
    let rate = 0;
    let concurrentSeconds = 0;
    if (runs("concurrent")) {
      const before429 = limitedSoFar();
      const requestsBefore = discord.requests.length;
      const concurrentStart = Date.now();
      await Promise.all(
        people.map(async (person, i) => {
          await new Promise((resolve) => setTimeout(resolve, (i * 1000) / ARRIVALS_PER_SECOND));
          for (let round = 0; round < ROUNDS; round++) {
            concurrent.push(await mention(channels[i]!, person, 100));
          }
        }),
      );
      concurrentSeconds = (Date.now() - concurrentStart) / 1000;
      limited = limitedSoFar() - before429;
      rate = (discord.requests.length - requestsBefore) / concurrentSeconds;
    }

    // 50 mentions dispatched in the same instant (each `mention` posts before its first await), each in a
    // channel no other scenario used, after the concurrent runs have all finished.
    const burst: Sample[] = [];
    let burstLimited = 0;
    if (runs("burst")) {
      const before429 = limitedSoFar();
      burst.push(...(await Promise.all(people.map((person, i) => mention(burstChannels[i]!, person, 4)))));
      burstLimited = limitedSoFar() - before429;
    }

    const row = (name: string, samples: Sample[], limitedHere: number) => {
      const acks = samples.map((s) => s.ack);
      const texts = samples.map((s) => s.firstText);
      return `| ${name} | ${samples.length} | ${percentile(acks, 50).toFixed(1)} | ${percentile(acks, 99).toFixed(1)} | ${(percentile(acks, 50) / percentile(baseline, 50)).toFixed(1)}× | ${percentile(texts, 50).toFixed(1)} | ${percentile(texts, 99).toFixed(1)} | ${limitedHere} |`;
    };
    console.log(
      `\nDiscord end to end (model TTFT ${TTFT_MS} ms; bare HTTP round trip p50 ${percentile(baseline, 50).toFixed(2)} ms)\n`,
    );
    console.log(
      "| scenario | mentions | ack p50 ms | ack p99 ms | ack p50 / bare HTTP | first text overhead p50 ms | first text overhead p99 ms | 429s |",
    );
    console.log("|---|---|---|---|---|---|---|---|");
    if (runs("single")) console.log(row("1 thread", sequential, singleLimited));
    if (runs("concurrent")) console.log(row(`${THREADS} concurrent threads`, concurrent, limited));
    if (runs("burst")) console.log(row(`burst of ${THREADS} new threads`, burst, burstLimited));
    if (runs("concurrent")) {
      console.log(
        `\n${THREADS} concurrent threads: ${limited} responses with 429, ${rate.toFixed(1)} REST requests/s to Discord over ${concurrentSeconds.toFixed(0)} s`,
      );
    }
    const p = (samples: Sample[], key: "ack" | "firstText", at: number) =>
      percentile(
        samples.map((s) => s[key]),
        at,
      );
    const checks: [string, boolean][] = [];
    if (runs("single")) {
      checks.push(
        ["1 thread: ack p50 ≤ 10 ms", p(sequential, "ack", 50) <= 10],
        ["1 thread: ack p99 ≤ 100 ms", p(sequential, "ack", 99) <= 100],
        ["1 thread: first text overhead p99 ≤ 50 ms", p(sequential, "firstText", 99) <= 50],
      );
    }
    if (runs("concurrent")) {
      const name = `${THREADS} concurrent threads`;
      checks.push(
        [`${name}: ack p50 ≤ 10 ms (issue #17)`, p(concurrent, "ack", 50) <= 10],
        [`${name}: ack p99 ≤ 50 ms (issue #17)`, p(concurrent, "ack", 99) <= 50],
        [`${name}: ack p99 ≤ 100 ms`, p(concurrent, "ack", 99) <= 100],
        [`${name}: first text overhead p99 ≤ 50 ms`, p(concurrent, "firstText", 99) <= 50],
        [`${name}: no 429 (${limited})`, limited === 0],
      );
    }
    if (runs("burst")) {
      const name = `burst of ${THREADS} new threads`;
      checks.push(
        [`${name}: ack p99 ≤ 100 ms (issue #17)`, p(burst, "ack", 99) <= 100],
        [`${name}: no 429 (${burstLimited})`, burstLimited === 0],
      );
    }
    console.log("");
    for (const [name, ok] of checks) console.log(`${verdict(ok)}  ${name}`);
    if (args.verbose) {
      const queue = createRunQueue(connect({ blocking: true }), prefix);
      const jobs = await queue.getJobs(["completed"]);
      const waits = jobs.map((job) => (job.processedOn ?? 0) - job.timestamp);
      console.log(
        `queue wait (job added → taken by a worker): p50 ${percentile(waits, 50)} ms, p99 ${percentile(waits, 99)} ms, max ${Math.max(...waits)} ms`,
      );
      await queue.close();
      for (const [name, list] of [
        ["1 thread", sequential],
        [`${THREADS} concurrent threads`, concurrent],
        [`burst of ${THREADS} new threads`, burst],
      ] as const) {
        if (list.length === 0) continue;
        const toModel = list.map((sample) => sample.toModel);
        console.log(
          `${name}: mention → model request p50 ${percentile(toModel, 50).toFixed(1)} ms, p99 ${percentile(toModel, 99).toFixed(1)} ms`,
        );
      }
      for (const proc of processes) {
        const warnings = proc.lines.filter((line) => /"level":(40|50|60)/.test(line));
        console.log(
          `\n${proc.role}: ${warnings.length} warnings/errors${warnings.length ? `, e.g.\n  ${warnings.slice(0, 3).join("\n  ")}` : ""}`,
        );
      }
      for (const sample of [...concurrent, ...burst].sort((a, b) => b.ack - a.ack).slice(0, 2)) {
        console.log(
          `\nslow ack (${sample.ack.toFixed(1)} ms):\n  ${sample.timeline.slice(0, 6).join("\n  ")}`,
        );
      }
      for (const sample of [
        ...[...sequential].sort((a, b) => b.firstText - a.firstText).slice(0, 1),
        ...[...concurrent].sort((a, b) => b.firstText - a.firstText).slice(0, 2),
      ]) {
        console.log(
          `\nslow first text (${sample.firstText.toFixed(1)} ms):\n  ${sample.timeline.slice(0, 12).join("\n  ")}`,
        );
      }
    }
    console.log(`\n(${((Date.now() - started) / 1000).toFixed(0)} s)`);
  } finally {
    clearTimeout(deadline);
    await cleanup();
  }
}

await main();
