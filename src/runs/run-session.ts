import {
  type AgentContext,
  type AgentEvent,
  type AgentLoopConfig,
  type AgentMessage,
  type AssistantMessage,
  runAgentLoop,
  runAgentLoopContinue,
  type StreamFn,
} from "../agent/index.js";
import {
  type ChatOutbound,
  type ChatUser,
  parseThreadId,
  type RunRenderer,
  type RunStats,
  type ThreadRef,
} from "../chat/index.js";
import { ApprovalGate } from "./approvals.js";
import { Lease } from "./lease.js";
import { createLoopGuard, type LoopGuard } from "./loop-guard.js";
import type { RunProcessorDeps } from "./processor.js";
import type { RunJobData } from "./queue.js";
import { QueueMarks } from "./queue-marks.js";
import { recoverInterruptedCalls } from "./recovery.js";
import { budgetStopReason, wallLimitReason } from "./run-budgets.js";
import { endRun, type SessionOutcome } from "./run-end.js";
import { RunInterrupts } from "./run-interrupts.js";
import { createRunLoopConfig, createRunMeter, resolveRunAgent } from "./run-loop-config.js";
import { openRunReply } from "./run-reply.js";
import type { RunLogger, RunObserver, ToolRunContext } from "./setup.js";
import { SILENT_LOGGER } from "./setup.js";
import type { SpendMeter } from "./spend-meter.js";
import type { StartReply, ThreadScripts } from "./thread-scripts.js";
import {
  loadRunTranscript,
  parseMeta,
  parseTranscript,
  parseUser,
  ThreadStore,
  transcriptTailFor,
} from "./thread-store.js";
import { createToolApproval, type ToolApprovalHook } from "./tool-approval.js";
import { RunTracer } from "./tracing.js";
import { type DrainKind, TranscriptSink } from "./transcript-sink.js";

export { RunInterruptedError, RunLeaseLapsedError, type SessionOutcome } from "./run-end.js";

/** What the job knows about its retries (a BullMQ job satisfies this). */
export interface RunAttempts {
  /** Failed attempts before this one. */
  attemptsMade?: number;
  opts?: { attempts?: number };
}

/** What {@link RunSession.prepare} hands the loop. */
interface PreparedLoop {
  sink: TranscriptSink;
  /** Prompts the start script drained: the loop's first input. */
  prompts: AgentMessage[];
  loopConfig: AgentLoopConfig;
  meter: SpendMeter;
  streamFn: StreamFn;
  context: () => AgentContext;
}

/** One execution of a run job: claim → loop → one end step. */
export class RunSession {
  private readonly thread: ThreadRef;
  private readonly outbound: ChatOutbound;
  private readonly log: RunLogger;
  private readonly observer: RunObserver;
  private readonly store: ThreadStore;
  private readonly marks: QueueMarks;
  private readonly controller = new AbortController();
  private readonly stats: RunStats = { turns: 0, toolCalls: 0, inputTokens: 0, outputTokens: 0 };
  private readonly startedAt = Date.now();
  private stopBy: ChatUser | null | undefined;
  private budgetReason: string | undefined;
  private readonly loopGuard: LoopGuard;
  private shuttingDown = false;
  private seenVisible = false;
  private lease: Lease | undefined;
  private sink: TranscriptSink | undefined;
  private gate: ApprovalGate | undefined;
  private approvals: ToolApprovalHook | undefined;
  private renderer: RunRenderer | undefined;
  /** Steering messages the start script drained: the answer to the first steering poll. */
  private startSteering: AgentMessage[] | undefined;
  /** What queued message the loop yields to now (⚡ interrupts, and steers for interruptible tools). */
  private readonly interrupts = new RunInterrupts(() => this.drain("interrupt", "all"));

  constructor(
    private readonly deps: RunProcessorDeps,
    private readonly scripts: ThreadScripts,
    private readonly job: RunJobData,
    private readonly attempts: RunAttempts = {},
    private readonly tracer: RunTracer = new RunTracer(undefined),
  ) {
    this.thread = parseThreadId(job.threadId);
    this.outbound = tracer.outbound(deps.outbound(this.thread));
    this.log = deps.log ?? SILENT_LOGGER;
    this.observer = deps.observer ?? {};
    this.store = new ThreadStore(scripts.redis, deps.config.prefix);
    this.marks = new QueueMarks(this.outbound, this.thread, deps.config.reactions, this.log, this.fields);
    this.loopGuard = createLoopGuard(deps.config.loopGuard);
  }

  private get fields(): Record<string, unknown> {
    return { threadId: this.job.threadId, runId: this.job.runId };
  }

  async execute(workerSignal: AbortSignal | undefined): Promise<void> {
    const { config, bus } = this.deps;
    // Listen before claiming so a stop published right after the claim is not missed.
    const cleanups: (() => void)[] = [
      bus.on(this.job.runId, (event) => {
        if (event.type === "abort") this.requestStop(event.by ?? null);
        else if (event.type === "inbox") this.interrupts.arrived(event.disposition, event.by);
      }),
    ];
    const onWorkerAbort = () => {
      this.shuttingDown = true;
      this.controller.abort();
    };
    workerSignal?.addEventListener("abort", onWorkerAbort, { once: true });
    cleanups.push(() => workerSignal?.removeEventListener("abort", onWorkerAbort));
    let outcome: SessionOutcome;
    try {
      const start = await this.scripts.start(this.job.threadId, {
        run: this.job.runId,
        leaseMs: config.leaseMs,
        steeringMode: config.steeringMode === "all" ? "all" : "one",
        // With a run-level context manager, only the part of the transcript it can use is loaded (see
        // loadRunTranscript); without one every request carries the whole transcript.
        tail: this.deps.agent.contextTransform ? transcriptTailFor(this.deps.agent.model.contextWindow) : 0,
      });
      if (start.kind !== "ok") {
        this.log.info(this.fields, "run job is stale; another run owns the thread");
        return;
      }
      cleanups.push(this.deps.active?.enter(this.job.threadId) ?? (() => {}));
      cleanups.push(this.claim(start));
      this.log.info(this.fields, "run started");
      outcome = await this.loop(start);
    } catch (err) {
      outcome = this.failure(err);
    } finally {
      for (const cleanup of cleanups.splice(0)) cleanup();
    }
    // Cards shown ahead for calls the loop never made (e.g. refused by the loop guard) would wait forever.
    const resumable = outcome.kind === "lost" || outcome.kind === "interrupted";
    if (!resumable && !(outcome.kind === "failed" && !outcome.final)) this.approvals?.withdrawUnclaimed();
    try {
      await this.end(outcome, workerSignal);
    } finally {
      this.lease?.stop();
    }
  }

  /** Takes the lease the start script handed out; returns what undoes the claim's listeners. */
  private claim(start: Extract<StartReply, { kind: "ok" }>): () => void {
    const { config, bus } = this.deps;
    const lease = new Lease(this.scripts, this.job.threadId, start.token, config.leaseMs, {
      lost: () => {
        this.log.warn(this.fields, "lost the thread lease; stopping this run");
        this.controller.abort();
      },
      stopRequested: (by) => this.requestStop(parseUser(by) ?? null),
      beat: () => this.gate?.recheck(),
      waiting: (waiting) => this.interrupts.observe(waiting),
      failed: (err) => this.log.warn({ ...this.fields, err }, "lease heartbeat failed"),
    });
    this.lease = lease;
    lease.start();
    if (start.stopBy) this.requestStop(parseUser(start.stopBy) ?? null);
    const wall = setTimeout(() => {
      this.budgetReason = wallLimitReason(config.budgets.maxWallMs);
      this.controller.abort();
    }, config.budgets.maxWallMs);
    // A stop or a decision published while the subscriber reconnected is state in Redis: read it again.
    const offReconnect = bus.onReconnect(() => {
      this.gate?.recheck();
      this.store.stopBy(this.job.threadId).then(
        (by) => {
          if (by) this.requestStop(by);
        },
        () => {},
      );
      this.store.waiting(this.job.threadId).then(
        (waiting) => this.interrupts.observe(waiting),
        () => {},
      );
    });
    return () => {
      clearTimeout(wall);
      offReconnect();
    };
  }

  private requestStop(by: ChatUser | null): void {
    if (this.stopBy === undefined) this.stopBy = by;
    this.controller.abort();
  }

  private failure(err: unknown): SessionOutcome {
    const made = this.attempts.attemptsMade ?? 0;
    const allowed = this.attempts.opts?.attempts ?? 1;
    return { kind: "failed", error: err, final: made + 1 >= allowed };
  }

  /**
   * Builds what the loop runs with from the claimed state: the transcript sink, the run's reply, the
   * approval gate and the loop's config. May throw (Redis, the app's setup functions).
   */
  private async prepare(start: Extract<StartReply, { kind: "ok" }>): Promise<PreparedLoop> {
    const { config } = this.deps;
    const lease = this.lease!;
    const loaded = this.deps.agent.contextTransform
      ? await loadRunTranscript(this.store, this.job.threadId, start.transcript, start.transcriptFrom)
      : { messages: parseTranscript(start.transcript), base: 0, bodyBase: 0 };
    const sink = new TranscriptSink(
      this.scripts,
      lease,
      config.retentionMs,
      loaded.messages,
      loaded.base,
      loaded.bodyBase,
    );
    this.sink = sink;
    const prompts = sink.take("prompt", start.prompts);
    // Interrupts queued before the claim are delivered with the first steering poll, ahead of it.
    this.startSteering = [...sink.take("interrupt", start.interrupts), ...sink.take("steer", start.steering)];
    const meta = parseMeta(start.meta);
    const requester = meta.requester ?? meta.startedBy ?? { id: "", name: "someone" };
    const ctx: ToolRunContext = {
      thread: this.thread,
      threadId: this.job.threadId,
      runId: this.job.runId,
      requester,
      settings: meta.settings,
    };
    const setup = this.deps.agent;
    const agent = resolveRunAgent(setup, ctx, config.toolResultMaxChars, sink, lease);
    const { tools, systemPrompt } = agent;
    this.renderer = await openRunReply({
      redis: this.scripts.redis,
      config,
      job: this.job,
      outbound: this.outbound,
      thread: this.thread,
      footer: meta.settings.footer ?? config.footer,
      log: this.log,
      fields: this.fields,
    });
    this.gate = new ApprovalGate({
      scripts: this.scripts,
      store: this.store,
      bus: this.deps.bus,
      thread: this.thread,
      threadId: this.job.threadId,
      runId: this.job.runId,
      token: () => lease.token,
      known: start.approvals,
      outbound: this.outbound,
      approvers: config.approvers,
      timeoutMs: config.approvalTimeoutMs,
      reminderMs: config.approvalReminderMs,
      retentionMs: config.retentionMs,
      onError: (err, operation) =>
        this.log.warn({ ...this.fields, err, operation }, "approval card update failed"),
    });
    this.approvals = createToolApproval({
      tools,
      ctx,
      gate: this.gate,
      transcript: sink.messages,
      positionOf: (message) => sink.positionOf(message),
      store: this.store,
      observer: this.tracer.observe(this.observer),
    });
    const loopConfig = createRunLoopConfig({
      setup,
      config,
      ctx,
      agent,
      sink,
      drain: (kind, mode) => this.drain(kind, mode),
      interrupts: this.interrupts,
      loopGuard: this.loopGuard,
      approvals: this.approvals,
      tracer: this.tracer,
      shouldStopAfterTurn: () => this.budgetExceeded(),
    });
    const meter = createRunMeter(ctx, {
      scripts: this.scripts,
      config,
      log: this.log,
      fields: this.fields,
      observer: this.observer,
      capReached: (reason) => {
        this.budgetReason ??= reason;
      },
    });
    const metered = meter.wrap(this.tracer.wrapStream(setup.streamFn));
    const streamFn: StreamFn = (model, llmContext, options) => {
      this.interrupts.requestStarted();
      return metered(model, llmContext, options);
    };
    const context = () => ({ systemPrompt, tools, messages: sink.messages });
    return { sink, prompts, loopConfig, meter, streamFn, context };
  }

  /** Runs the loop from the claimed state until it ends; returns how. Never throws. */
  private async loop(start: Extract<StartReply, { kind: "ok" }>): Promise<SessionOutcome> {
    const { config } = this.deps;
    const lease = this.lease!;
    const prepared = await this.prepare(start);
    const { sink, loopConfig, meter, streamFn, context } = prepared;
    let prompts = prepared.prompts;
    const emit = (event: AgentEvent) => this.onEvent(event);
    const signal = this.controller.signal;
    try {
      if (!signal.aborted) {
        await recoverInterruptedCalls({
          transcript: sink.messages,
          calls: sink.localCalls(start.calls),
          context: context(),
          config: loopConfig,
          emit,
          signal,
        });
      }
      while (!signal.aborted) {
        const tail = sink.messages.at(-1) as { role?: string } | undefined;
        if (prompts.length > 0) {
          await runAgentLoop(prompts, context(), loopConfig, emit, signal, streamFn);
        } else if (tail && tail.role !== "assistant") {
          await runAgentLoopContinue(
            { ...context(), messages: sink.messages.slice() },
            loopConfig,
            emit,
            signal,
            streamFn,
          );
        }
        const reason = sink.lastAssistant()?.stopReason;
        if (signal.aborted || this.budgetReason || reason === "error" || reason === "aborted") break;
        // A natural release puts in-flight messages back in the inbox: steering the start script drained
        // but no loop asked for is then queued again, to be drained anew.
        sink.forget(this.startSteering ?? []);
        this.startSteering = undefined;
        const release = await sink.settled(
          this.scripts.release(this.job.threadId, {
            token: lease.token,
            mode: "natural",
            now: Date.now(),
            retention: config.retentionMs,
          }),
        );
        if (release.kind === "released") {
          lease.stop();
          return { kind: "completed" };
        }
        if (release.kind === "lost") lease.lose();
        else prompts = await this.drainNext();
      }
    } catch (err) {
      if (!lease.lost && !this.shuttingDown) return this.failure(err);
    } finally {
      // The run's spend is in the counters before it reports its end.
      await meter.settled();
    }
    if (lease.lost) return { kind: "lost" };
    if (this.shuttingDown) return { kind: "interrupted" };
    if (this.stopBy !== undefined) return { kind: "stopped", by: this.stopBy ?? undefined };
    if (this.budgetReason) return { kind: "budget", reason: this.budgetReason };
    return { kind: "stopped", by: undefined };
  }

  /** The end step ({@link endRun}) with what this session claimed, showed and counted. */
  private end(outcome: SessionOutcome, workerSignal: AbortSignal | undefined): Promise<void> {
    const run = {
      config: this.deps.config,
      scripts: this.scripts,
      store: this.store,
      job: this.job,
      lease: this.lease,
      marks: this.marks,
      log: this.log,
      fields: this.fields,
      observer: this.observer,
      tracer: this.tracer,
      renderer: this.renderer,
      stats: this.stats,
      startedAt: this.startedAt,
    };
    return endRun(run, outcome, workerSignal);
  }

  private budgetExceeded(): boolean {
    const reason = budgetStopReason(this.deps.config.budgets, this.stats, this.startedAt, this.loopGuard);
    if (reason) this.budgetReason = reason;
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
    const lease = this.lease!;
    this.interrupts.beforeDrain(kind);
    const reply = await this.scripts.drain(this.job.threadId, {
      token: lease.token,
      disposition: kind,
      mode,
    });
    if (reply.kind === "lost") {
      lease.lose();
      return [];
    }
    this.interrupts.observe(reply.waiting);
    return this.sink!.take(kind, reply.entries);
  }

  /** After the loop ended naturally with messages still queued: the next batch, interrupts and steering first. */
  private async drainNext(): Promise<AgentMessage[]> {
    const { steeringMode, followUpMode } = this.deps.config;
    const interrupts = await this.drain("interrupt", "all");
    if (interrupts.length > 0) return interrupts;
    const steer = await this.drain("steer", steeringMode === "all" ? "all" : "one");
    if (steer.length > 0) return steer;
    const followUp = await this.drain("followUp", followUpMode === "all" ? "all" : "one");
    if (followUp.length > 0) return followUp;
    return this.drain("prompt", "all");
  }

  /** The loop's event sink: render, then persist. Awaited by the loop, so persistence keeps its order. */
  private async onEvent(event: AgentEvent): Promise<void> {
    this.tracer.onEvent(event);
    // A claim that lost its thread shows nothing more: its successor renders the run.
    if (this.lease?.lost) return;
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
      const delivered = await this.sink!.persist(message);
      if (delivered && delivered.kind !== "prompt") {
        this.marks.delivered(delivered.id, delivered.kind);
        if (delivered.receivedAt > 0) this.observer.delivered?.(Date.now() - delivered.receivedAt);
      }
      if ((message as { role?: string }).role === "assistant") this.countTurn(message as AssistantMessage);
    } else if (event.type === "tool_execution_end") {
      this.stats.toolCalls++;
      this.observer.toolCall?.(event.toolName, event.isError);
      this.sink!.finishCall(event.toolCallId, event.result, event.isError);
    }
  }

  private countTurn(message: AssistantMessage): void {
    this.observer.turn?.();
    this.stats.turns++;
    this.stats.inputTokens += message.usage.input;
    this.stats.outputTokens += message.usage.output;
    if (message.usage.cost.total > 0) this.stats.cost = (this.stats.cost ?? 0) + message.usage.cost.total;
  }
}
