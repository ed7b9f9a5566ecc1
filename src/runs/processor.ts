import type { Redis } from "ioredis";
import {
  type AgentEvent,
  type AgentLoopConfig,
  type AgentMessage,
  type AssistantMessage,
  runAgentLoop,
  runAgentLoopContinue,
} from "../agent/index.js";
import {
  type ChatOutbound,
  type ChatUser,
  createRunRenderer,
  parseThreadId,
  type RunOutcome,
  type RunStats,
  type ThreadRef,
} from "../chat/index.js";
import type { ActiveRuns } from "./active-runs.js";
import { ApprovalGate } from "./approvals.js";
import type { EventBus } from "./bus.js";
import type { RunsConfig } from "./config.js";
import { threadKeys } from "./keys.js";
import type { RunJobData } from "./queue.js";
import { recoverInterruptedCalls } from "./recovery.js";
import { type ScriptedRedis, threadKeyList, withScripts } from "./scripts.js";
import type {
  AgentSetup,
  OutboundResolver,
  RunLogger,
  RunObserver,
  RunTool,
  ToolRunContext,
} from "./setup.js";
import { SILENT_LOGGER } from "./setup.js";
import { parseMeta, parseTranscript, parseUser, type ThreadMeta, ThreadStore } from "./thread-store.js";
import { approvalIdFor, createToolApproval } from "./tool-approval.js";

/** What the run processor needs. */
export interface RunProcessorDeps {
  /** A connection for ordinary (non-blocking) commands. */
  redis: Redis;
  /** Started event bus of this process. */
  bus: EventBus;
  config: RunsConfig;
  outbound: OutboundResolver;
  agent: AgentSetup;
  log?: RunLogger;
  observer?: RunObserver;
  /** Where the processor records the runs it is executing (claimed, not yet returned). */
  active?: ActiveRuns;
}

/** The job as the processor reads it (a BullMQ job satisfies this). */
export interface RunJob {
  data: RunJobData;
}

/** Thrown when a worker shuts down mid-run: BullMQ retries the job and the run resumes elsewhere. */
export class RunInterruptedError extends Error {
  constructor() {
    super("Run interrupted by worker shutdown; it will resume from the transcript.");
    this.name = "RunInterruptedError";
  }
}

/**
 * Creates the BullMQ processor of run jobs: claims the thread's lease, loads the transcript, runs the
 * agent with Redis-backed queues, persists every message, and releases the thread atomically with
 * checking its inbox. A plain function of (job, token, signal) that tests call directly.
 */
export function createRunProcessor(
  deps: RunProcessorDeps,
): (job: RunJob, token?: string, signal?: AbortSignal) => Promise<void> {
  const scripts = withScripts(deps.redis);
  const store = new ThreadStore(deps.redis, deps.config.prefix);
  return async (job, _token, signal) => {
    const session = new RunSession(deps, scripts, store, job.data);
    await session.execute(signal);
  };
}

type DrainKind = "prompt" | "steer" | "followUp";

/** One execution of a run job. */
class RunSession {
  private readonly thread: ThreadRef;
  private readonly keys: string[];
  private readonly outbound: ChatOutbound;
  private readonly log: RunLogger;
  private readonly controller = new AbortController();
  private readonly transcript: AgentMessage[] = [];
  private readonly drained = new Map<AgentMessage, { id: string; kind: DrainKind; receivedAt: number }>();
  private readonly observer: RunObserver;
  private seenVisible = false;
  private readonly stats: RunStats = { turns: 0, toolCalls: 0, inputTokens: 0, outputTokens: 0 };
  private readonly startedAt = Date.now();
  private stopBy: ChatUser | null | undefined;
  private budgetReason: string | undefined;
  private leaseLost = false;
  private shuttingDown = false;
  private lastAssistant: AssistantMessage | undefined;
  private renderer: ReturnType<typeof createRunRenderer> | undefined;
  /** Writes issued without waiting (tool result records); the next awaited write waits for them too. */
  private readonly unsettled: Promise<unknown>[] = [];
  /** Steering messages the start script drained: the answer to the first steering poll. */
  private startSteering: AgentMessage[] | undefined;

  constructor(
    private readonly deps: RunProcessorDeps,
    private readonly scripts: ScriptedRedis,
    private readonly store: ThreadStore,
    private readonly job: RunJobData,
  ) {
    this.thread = parseThreadId(job.threadId);
    this.keys = threadKeyList(threadKeys(deps.config.prefix, job.threadId));
    this.outbound = deps.outbound(this.thread);
    this.log = deps.log ?? SILENT_LOGGER;
    this.observer = deps.observer ?? {};
  }

  private get fields(): Record<string, unknown> {
    return { threadId: this.job.threadId, runId: this.job.runId };
  }

  async execute(workerSignal: AbortSignal | undefined): Promise<void> {
    const { config, bus } = this.deps;
    // Listen before claiming so a stop published right after the claim is not missed.
    const unsubscribe = bus.on(this.job.runId, (event) => {
      if (event.type !== "abort") return;
      this.stopBy = event.by ?? null;
      this.controller.abort();
    });
    const onWorkerAbort = () => {
      this.shuttingDown = true;
      this.controller.abort();
    };
    workerSignal?.addEventListener("abort", onWorkerAbort, { once: true });
    const timers: NodeJS.Timeout[] = [];
    let leave: (() => void) | undefined;
    try {
      // One round trip: the lease, the transcript, the meta and the prompts that start the run.
      const start = (await this.scripts.run("tlStart", this.keys, [
        this.job.runId,
        config.leaseMs,
        config.steeringMode === "all" ? "all" : "one",
      ])) as ["stale"] | ["ok", string, string[], string[], string[], string[]];
      if (start[0] !== "ok") {
        this.log.info(this.fields, "run job is stale; another run owns the thread");
        return;
      }
      leave = this.deps.active?.enter(this.job.threadId);
      this.log.info(this.fields, "run started");
      const [, stopBy, transcript, metaFlat, prompts, steering] = start;
      this.startSteering = this.takeDrained("steer", steering);
      if (stopBy) {
        this.stopBy = parseUser(stopBy) ?? null;
        this.controller.abort();
      }
      // Renew at a third of the lease, whatever its length: a floor above that lets a short lease lapse
      // between heartbeats, and a second run would start on the thread while this one still works.
      timers.push(setInterval(() => void this.heartbeat(), Math.max(1, Math.floor(config.leaseMs / 3))));
      timers.push(
        setTimeout(() => {
          this.budgetReason = `This run took longer than its limit of ${Math.round(config.budgets.maxWallMs / 60000)} min, so it was stopped.`;
          this.controller.abort();
        }, config.budgets.maxWallMs),
      );
      const meta: Record<string, string> = {};
      for (let i = 0; i + 1 < metaFlat.length; i += 2) meta[metaFlat[i]!] = metaFlat[i + 1]!;
      await this.run(parseTranscript(transcript), parseMeta(meta), this.takeDrained("prompt", prompts));
    } finally {
      for (const timer of timers) clearInterval(timer);
      workerSignal?.removeEventListener("abort", onWorkerAbort);
      unsubscribe();
      leave?.();
    }
    if (this.shuttingDown && !this.leaseLost) throw new RunInterruptedError();
  }

  private async heartbeat(): Promise<void> {
    try {
      const ok = await this.scripts.run(
        "tlHeartbeat",
        [this.keys[1]!],
        [this.job.runId, this.deps.config.leaseMs],
      );
      if (ok !== 1) this.loseLease();
    } catch (err) {
      this.log.warn({ ...this.fields, err }, "lease heartbeat failed");
    }
  }

  private loseLease(): void {
    if (this.leaseLost) return;
    this.leaseLost = true;
    this.log.warn(this.fields, "lost the thread lease; stopping this run");
    this.controller.abort();
  }

  /** Runs the loop from the claimed state: `prompts` were drained by the start script. */
  private async run(transcript: AgentMessage[], meta: ThreadMeta, prompts: AgentMessage[]): Promise<void> {
    const { config } = this.deps;
    this.transcript.push(...transcript);
    const requester = meta.requester ?? meta.startedBy ?? { id: "", name: "someone" };
    const ctx: ToolRunContext = {
      thread: this.thread,
      threadId: this.job.threadId,
      runId: this.job.runId,
      requester,
    };
    const setup = this.deps.agent;
    const tools: RunTool[] = typeof setup.tools === "function" ? setup.tools(ctx) : setup.tools;
    const systemPrompt =
      typeof setup.systemPrompt === "function" ? setup.systemPrompt(ctx) : setup.systemPrompt;
    this.renderer = createRunRenderer({
      outbound: this.outbound,
      thread: this.thread,
      footer: config.footer,
      onError: (err, operation) => this.log.warn({ ...this.fields, err, operation }, "chat update failed"),
    });
    const gate = new ApprovalGate({
      scripts: this.scripts,
      bus: this.deps.bus,
      prefix: config.prefix,
      thread: this.thread,
      threadId: this.job.threadId,
      runId: this.job.runId,
      outbound: this.outbound,
      approvers: config.approvers,
      timeoutMs: config.approvalTimeoutMs,
      retentionMs: config.retentionMs,
      onError: (err, operation) =>
        this.log.warn({ ...this.fields, err, operation }, "approval card update failed"),
    });
    const beforeToolCall = createToolApproval({
      tools,
      ctx,
      gate,
      transcript: this.transcript,
      store: this.store,
      redis: this.deps.redis,
      keys: threadKeys(config.prefix, this.job.threadId),
      observer: this.observer,
    });
    const approvalKeys = threadKeys(config.prefix, this.job.threadId);
    const loopConfig: AgentLoopConfig = {
      ...setup.streamOptions,
      model: setup.model,
      convertToLlm: setup.convertToLlm,
      toolExecution: setup.toolExecution ?? "parallel",
      getSteeringMessages: () => this.drain("steer", config.steeringMode === "all" ? "all" : "one"),
      getFollowUpMessages: () => this.drain("followUp", config.followUpMode === "all" ? "all" : "one"),
      beforeToolCall,
      shouldStopAfterTurn: () => this.budgetExceeded(),
    };
    const transformContext =
      setup.contextTransform?.({
        ...ctx,
        systemPrompt,
        tools,
        appendToTranscript: (message) => this.appendCustom(message),
      }) ?? setup.transformContext;
    if (transformContext) loopConfig.transformContext = transformContext;
    const emit = (event: AgentEvent) => this.onEvent(event);
    const signal = this.controller.signal;
    const context = () => ({ systemPrompt, tools, messages: this.transcript });

    let released = false;
    let outcome: RunOutcome = { kind: "completed" };
    try {
      if (!signal.aborted) {
        await recoverInterruptedCalls({
          transcript: this.transcript,
          store: this.store,
          threadId: this.job.threadId,
          context: context(),
          config: loopConfig,
          emit,
          signal,
          approvalExists: async (assistantIndex, toolCallId) =>
            (await this.deps.redis.exists(
              approvalKeys.approval(approvalIdFor(assistantIndex, toolCallId)),
            )) === 1,
        });
      }
      while (!signal.aborted) {
        const tail = this.transcript.at(-1) as { role?: string } | undefined;
        if (prompts.length > 0) {
          await runAgentLoop(prompts, context(), loopConfig, emit, signal, setup.streamFn);
        } else if (tail && tail.role !== "assistant") {
          await runAgentLoopContinue(
            { ...context(), messages: this.transcript.slice() },
            loopConfig,
            emit,
            signal,
            setup.streamFn,
          );
        }
        const reason = this.lastAssistant?.stopReason;
        if (signal.aborted || this.budgetReason || reason === "error" || reason === "aborted") break;
        this.forgetStartSteering();
        const release = (await this.settled(
          this.scripts.run("tlRelease", this.keys, [this.job.runId, "natural", Date.now()]),
        )) as string[];
        if (release[0] === "released") {
          released = true;
          break;
        }
        if (release[0] === "lost") {
          this.loseLease();
          break;
        }
        prompts = await this.drainNext();
      }
    } catch (err) {
      this.log.error({ ...this.fields, err }, "run failed");
      outcome = {
        kind: "failed",
        message: "Something went wrong while running this request; it has been logged.",
      };
      if (!this.leaseLost && !this.shuttingDown) {
        this.ended("failed");
        await this.finishRenderer(outcome);
        throw err;
      }
    }
    if (this.leaseLost || this.shuttingDown) {
      this.ended(this.leaseLost ? "lost" : "interrupted");
      await this.finishRenderer({
        kind: "stopped",
        by: undefined,
        reason: "The worker running this request stopped; it will resume.",
      });
      return;
    }
    if (!released) {
      const release = (await this.settled(
        this.scripts.run("tlRelease", this.keys, [this.job.runId, "stopped", Date.now()]),
      )) as string[];
      if (release[0] === "lost") this.loseLease();
      this.markNotProcessed(release.slice(1));
      if (this.stopBy !== undefined) outcome = { kind: "stopped", by: this.stopBy ?? undefined };
      else if (this.budgetReason) outcome = { kind: "budget", reason: this.budgetReason };
    }
    this.ended(outcome.kind);
    await this.finishRenderer(outcome);
  }

  /** Records how the run ended: the observer's metric and one log line with what the run did. */
  private ended(outcome: string): void {
    this.observer.runEnded?.(outcome);
    this.log.info(
      { ...this.fields, outcome, ...this.stats, durationMs: Date.now() - this.startedAt },
      "run finished",
    );
  }

  private async finishRenderer(outcome: RunOutcome): Promise<void> {
    try {
      await this.renderer?.finish(outcome, this.stats);
    } catch (err) {
      this.log.warn({ ...this.fields, err }, "final chat update failed");
    }
  }

  private budgetExceeded(): boolean {
    const { budgets } = this.deps.config;
    if (this.stats.turns >= budgets.maxTurns) {
      this.budgetReason = `This run reached its limit of ${budgets.maxTurns} turns, so it was stopped.`;
    } else if (
      budgets.maxTokens !== undefined &&
      this.stats.inputTokens + this.stats.outputTokens >= budgets.maxTokens
    ) {
      this.budgetReason = `This run used its budget of ${budgets.maxTokens} tokens, so it was stopped.`;
    } else if (Date.now() - this.startedAt >= budgets.maxWallMs) {
      this.budgetReason = `This run took longer than its limit of ${Math.round(budgets.maxWallMs / 60000)} min, so it was stopped.`;
    }
    return this.budgetReason !== undefined;
  }

  /** Takes queued messages for the loop; nothing once the run is stopping (they stay queued, then are marked). */
  private async drain(kind: DrainKind, mode: "one" | "all"): Promise<AgentMessage[]> {
    if (this.controller.signal.aborted) return [];
    if (kind === "steer" && this.startSteering !== undefined) {
      // The start script already made the first steering poll.
      const first = this.startSteering;
      this.startSteering = undefined;
      return first;
    }
    const reply = (await this.scripts.run("tlDrain", this.keys, [this.job.runId, kind, mode])) as
      | string[]
      | null;
    if (reply === null) {
      this.loseLease();
      return [];
    }
    return this.takeDrained(kind, reply);
  }

  /**
   * Before a natural release, which puts in-flight messages back in the inbox: steering the start script
   * drained but no loop asked for is then queued again, to be drained anew.
   */
  private forgetStartSteering(): void {
    for (const message of this.startSteering ?? []) this.drained.delete(message);
    this.startSteering = undefined;
  }

  /** Remembers drained messages (flat id, body, receivedAt triples) until they enter the transcript. */
  private takeDrained(kind: DrainKind, reply: readonly string[]): AgentMessage[] {
    const messages: AgentMessage[] = [];
    for (let i = 0; i + 2 < reply.length; i += 3) {
      const id = reply[i]!;
      const message = JSON.parse(reply[i + 1]!) as AgentMessage;
      this.drained.set(message, { id, kind, receivedAt: Number(reply[i + 2]) });
      messages.push(message);
    }
    return messages;
  }

  /** After the loop ended naturally with messages still queued: the next batch, steering first. */
  private async drainNext(): Promise<AgentMessage[]> {
    const { steeringMode, followUpMode } = this.deps.config;
    const steer = await this.drain("steer", steeringMode === "all" ? "all" : "one");
    if (steer.length > 0) return steer;
    const followUp = await this.drain("followUp", followUpMode === "all" ? "all" : "one");
    if (followUp.length > 0) return followUp;
    return this.drain("prompt", "all");
  }

  /** The loop's event sink: render, then persist. Awaited by the loop, so persistence keeps its order. */
  private async onEvent(event: AgentEvent): Promise<void> {
    this.renderer?.handle(event);
    if (!this.seenVisible && (event.type === "message_update" || event.type === "tool_execution_start")) {
      this.seenVisible = true;
      this.observer.firstVisible?.(Date.now() - this.startedAt);
    }
    if (event.type === "message_end") {
      const message = event.message;
      // A worker shutdown aborts the run only to hand it over: the stand-in "aborted" answer is not part of
      // the conversation, and the next worker continues from what was persisted before it.
      if (this.shuttingDown && (message as Partial<AssistantMessage>).stopReason === "aborted") return;
      this.transcript.push(message);
      const drained = this.drained.get(message);
      if (drained) {
        this.drained.delete(message);
        const acked = await this.settled(this.scripts.run("tlAck", this.keys, [this.job.runId, drained.id]));
        if (acked !== 1) this.loseLease();
        else if (drained.kind !== "prompt") {
          this.markDelivered(drained.id);
          if (drained.receivedAt > 0) this.observer.delivered?.(Date.now() - drained.receivedAt);
        }
      } else {
        const length = await this.settled(
          this.scripts.run("tlAppend", this.keys, [this.job.runId, JSON.stringify(message)]),
        );
        if (length === -1) this.loseLease();
      }
      if ((message as { role?: string }).role === "assistant") this.countTurn(message as AssistantMessage);
    } else if (event.type === "tool_execution_end") {
      this.stats.toolCalls++;
      this.observer.toolCall?.(event.toolName, event.isError);
      const record = JSON.stringify({ result: event.result, isError: event.isError });
      // Not awaited: the result's transcript append follows on the same connection (Redis applies them in
      // order) and waits for both, so a finished tool costs one round trip before the next step, not two.
      const recorded = this.scripts.run("tlRecordToolResult", this.keys, [
        this.job.runId,
        event.toolCallId,
        record,
      ]);
      recorded.catch(() => {}); // reported by the step that waits for it
      this.unsettled.push(recorded);
    }
  }

  /** Waits for `step` and for every write issued before it without waiting (a failure of either rejects). */
  private async settled<T>(step: Promise<T>): Promise<T> {
    const earlier = this.unsettled.splice(0);
    const [result] = await Promise.all([step, ...earlier]);
    return result;
  }

  /** Persists an app-defined message the loop does not emit (a context summary), keeping memory and Redis alike. */
  private async appendCustom(message: AgentMessage): Promise<boolean> {
    if (this.leaseLost) return false;
    const length = await this.scripts.run("tlAppend", this.keys, [this.job.runId, JSON.stringify(message)]);
    if (length === -1) {
      this.loseLease();
      return false;
    }
    // Approval ids use transcript positions, so the in-memory copy must match what a restart loads.
    this.transcript.push(message);
    return true;
  }

  private countTurn(message: AssistantMessage): void {
    this.observer.turn?.();
    this.lastAssistant = message;
    this.stats.turns++;
    this.stats.inputTokens += message.usage.input;
    this.stats.outputTokens += message.usage.output;
    if (message.usage.cost.total > 0) this.stats.cost = (this.stats.cost ?? 0) + message.usage.cost.total;
  }

  private markDelivered(messageId: string): void {
    const { reactions } = this.deps.config;
    void this.remark(messageId, [reactions.steer, reactions.followUp], reactions.delivered);
  }

  private markNotProcessed(messageIds: string[]): void {
    const { reactions } = this.deps.config;
    for (const id of messageIds)
      void this.remark(id, [reactions.steer, reactions.followUp], reactions.notProcessed);
  }

  private async remark(messageId: string, remove: string[], add: string): Promise<void> {
    try {
      await Promise.all(remove.map((emoji) => this.outbound.unreact(this.thread, messageId, emoji)));
      await this.outbound.react(this.thread, messageId, add);
    } catch (err) {
      this.log.warn({ ...this.fields, err, messageId }, "could not update message marks");
    }
  }
}
