import type { Redis } from "ioredis";
import { z } from "zod";
import type { AgentMessage } from "../../src/agent/index.js";
import { type ChatUser, type IncomingMessage, type ThreadRef, threadId } from "../../src/chat/index.js";
import {
  type AgentSetup,
  createRunQueue,
  Intake,
  type RunQueue,
  type RunsConfig,
  type RunTool,
  type RunWorkerHandle,
  runsConfig,
  startRunWorker,
  ThreadStore,
  threadKeys,
} from "../../src/runs/index.js";
import { MemoryOutbound } from "../fakes/memory-outbound.js";
import { ScriptedModel, type ScriptedResponse, testAgent } from "../fakes/scripted-model.js";
import { deferred } from "../support/async.js";
import { connect, deletePrefix, requireRedis, uniquePrefix } from "../support/redis.js";

export const alice: ChatUser = { id: "U_ALICE", name: "Alice" };
export const bob: ChatUser = { id: "U_BOB", name: "Bob" };
export const carol: ChatUser = { id: "U_CAROL", name: "Carol" };

/** A tool whose executions the test controls: `started` resolves at each call, `release()` lets it finish. */
export function gatedTool(name: string, approval: RunTool["approval"] = "never") {
  const calls: Record<string, unknown>[] = [];
  let gate = deferred();
  let started = deferred<Record<string, unknown>>();
  const tool: RunTool = {
    name,
    description: `${name} tool`,
    parameters: z.object({ value: z.string().optional() }),
    approval,
    execute: async (_id, params: Record<string, unknown>, signal) => {
      calls.push(params);
      started.resolve(params);
      await Promise.race([
        gate.promise,
        new Promise((_, reject) =>
          signal?.addEventListener("abort", () => reject(new Error("tool aborted"))),
        ),
      ]);
      return { content: [{ type: "text", text: `${name} done` }], details: {} };
    },
  };
  return {
    tool,
    calls,
    /** Resolves when the next call starts. */
    nextStart: () => started.promise,
    release() {
      gate.resolve();
      gate = deferred();
      started = deferred();
    },
  };
}

/** A tool that returns at once. */
export function instantTool(name: string, approval: RunTool["approval"] = "never") {
  const calls: Record<string, unknown>[] = [];
  const tool: RunTool = {
    name,
    description: `${name} tool`,
    parameters: z.object({ value: z.string().optional() }),
    approval,
    execute: async (_id, params: Record<string, unknown>) => {
      calls.push(params);
      return { content: [{ type: "text", text: `${name} ok` }], details: {} };
    },
  };
  return { tool, calls };
}

export interface HarnessOptions {
  /** Receives run events (metrics). */
  observer?: import("../../src/runs/index.js").RunObserver;
  log?: import("../../src/runs/index.js").RunLogger;
  script?: (
    | ScriptedResponse
    | ((request: import("../fakes/scripted-model.js").RecordedRequest) => ScriptedResponse)
  )[];
  tools?: RunTool[];
  config?: Partial<RunsConfig>;
  workers?: number;
  concurrency?: number;
  /** Replaces parts of the default agent setup (scripted model, test system prompt, `tools`). */
  agent?: Partial<AgentSetup>;
  /**
   * Give every worker its own Redis connection instead of sharing the intake's, as separate gateway and
   * worker processes have (their commands then interleave in Redis, not in one client pipeline).
   */
  separateConnections?: boolean;
}

/** A gateway-side Intake and N in-process workers on a real Redis, with a scripted model and a memory chat. */
export class RunsHarness {
  readonly prefix = uniquePrefix("runs");
  readonly redis: Redis = connect();
  private readonly bullConnections: Redis[] = [];
  readonly config: RunsConfig;
  readonly model: ScriptedModel;
  readonly chat = new MemoryOutbound();
  readonly queue: RunQueue;
  readonly intake: Intake;
  readonly store: ThreadStore;
  workers: RunWorkerHandle[] = [];
  private seq = 0;
  private readonly completions = new Map<string, { resolve: () => void; promise: Promise<void> }>();

  constructor(readonly options: HarnessOptions = {}) {
    this.config = runsConfig({ prefix: this.prefix, ...options.config });
    this.model = new ScriptedModel(options.script ?? []);
    this.queue = createRunQueue(this.bull(), this.prefix);
    this.intake = new Intake(this.redis, this.queue, this.config);
    this.store = new ThreadStore(this.redis, this.prefix);
  }

  private bull(): Redis {
    const connection = connect({ blocking: true });
    this.bullConnections.push(connection);
    return connection;
  }

  private extra(): Redis {
    const connection = connect();
    this.bullConnections.push(connection);
    return connection;
  }

  async start(): Promise<this> {
    await requireRedis(this.redis);
    for (let i = 0; i < (this.options.workers ?? 1); i++) await this.addWorker();
    return this;
  }

  async addWorker(): Promise<RunWorkerHandle> {
    const handle = await startRunWorker({
      redis: this.options.separateConnections ? this.extra() : this.redis,
      bullConnection: this.bull(),
      config: this.config,
      outbound: () => this.chat,
      agent: { ...testAgent(this.model.streamFn, this.options.tools), ...this.options.agent },
      concurrency: this.options.concurrency ?? 10,
      ...(this.options.observer ? { observer: this.options.observer } : {}),
      ...(this.options.log ? { log: this.options.log } : {}),
    });
    handle.worker.on("completed", (job) => this.completion(job.id!).resolve());
    handle.worker.on("failed", (job) => {
      if (job && job.attemptsMade >= (job.opts.attempts ?? 1)) this.completion(job.id!).resolve();
    });
    this.workers.push(handle);
    return handle;
  }

  private completion(runId: string) {
    let entry = this.completions.get(runId);
    if (!entry) {
      const d = deferred();
      entry = { resolve: d.resolve, promise: d.promise };
      this.completions.set(runId, entry);
    }
    return entry;
  }

  /** Resolves when the run's job finished (completed, or failed for good). */
  runFinished(runId: string): Promise<void> {
    return this.completion(runId).promise;
  }

  thread(name = "t1"): ThreadRef {
    return { platform: "slack", workspace: "T1", channel: "C1", thread: `${this.prefix}-${name}` };
  }

  message(thread: ThreadRef, text: string, options: Partial<IncomingMessage> = {}): IncomingMessage {
    this.seq++;
    return {
      id: `msg-${this.seq}`,
      thread,
      author: alice,
      text,
      attachments: [],
      mentionsBot: false,
      sentAt: Date.now(),
      ...options,
    };
  }

  /** Mentions the bot; returns the started run id. */
  async mention(thread: ThreadRef, text: string, author: ChatUser = alice): Promise<string> {
    const result = await this.intake.submit(this.message(thread, text, { mentionsBot: true, author }));
    if (result.kind !== "started") throw new Error(`expected a new run, got ${result.kind}`);
    return result.runId;
  }

  async transcript(thread: ThreadRef): Promise<AgentMessage[]> {
    return this.store.loadTranscript(threadId(thread));
  }

  /** The user texts in the transcript, in order. */
  async userTexts(thread: ThreadRef): Promise<string[]> {
    return (await this.transcript(thread))
      .filter((m) => (m as { role?: string }).role === "user")
      .map((m) => {
        const content = (m as { content: string | { type: string; text?: string }[] }).content;
        return typeof content === "string" ? content : content.map((b) => b.text ?? "").join("");
      });
  }

  keys(thread: ThreadRef) {
    return threadKeys(this.prefix, threadId(thread));
  }

  async isActive(thread: ThreadRef): Promise<boolean> {
    return (await this.redis.exists(this.keys(thread).lease)) === 1;
  }

  /**
   * Polls until no run job is waiting, active or delayed and none of `threads` holds a lease (nothing is
   * left to happen once no more messages arrive). Bounded by the test's timeout.
   */
  async quiescent(threads: ThreadRef[]): Promise<void> {
    for (;;) {
      const counts = await this.queue.getJobCounts("waiting", "active", "delayed", "prioritized", "paused");
      const jobs = Object.values(counts).reduce((sum, n) => sum + n, 0);
      // One EXISTS per thread: on a cluster the leases live in different slots.
      let leases = 0;
      for (const thread of threads) leases += await this.redis.exists(this.keys(thread).lease);
      if (jobs === 0 && leases === 0) return;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  async close(): Promise<void> {
    for (const worker of this.workers) await worker.close(true);
    await this.queue.close();
    await deletePrefix(this.redis, this.prefix);
    // QUIT, not a disconnect: a command still in flight (a finished run's last background write) gets its
    // reply instead of "Connection is closed" as an unhandled rejection (seen once in the cluster pass).
    await Promise.all(
      [...this.bullConnections, this.redis].map(async (connection) => {
        const quit = connection.quit().catch(() => {});
        await Promise.race([quit, new Promise((resolve) => setTimeout(resolve, 2000).unref())]);
        connection.disconnect();
      }),
    );
  }
}

/**
 * Resolves when run `runId`'s job completed, whichever worker ran it (a worker process the harness did not
 * start, too); rejects when it failed. Polls the queue.
 */
export async function jobFinished(harness: RunsHarness, runId: string): Promise<void> {
  for (;;) {
    const state = await harness.queue.getJobState(runId);
    if (state === "failed") throw new Error(`run ${runId} failed`);
    if (state === "completed") return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
