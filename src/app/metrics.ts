import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import type { RunObserver } from "../runs/index.js";
import type { PlatformObserver } from "./platforms.js";

/** What the run gauges read when `/metrics` is scraped: the runs a worker process is executing now. */
export interface RunsSampler {
  /** Thread ids of the runs this process is executing now, one per run. Must not throw. */
  activeThreadIds(): readonly string[];
  /** Messages queued in the inboxes of these threads (LLEN, summed). May reject (Redis down). */
  inboxDepth(threadIds: readonly string[]): Promise<number>;
}

/** Distinct tool names that get their own label; later ones count as `other`. */
export const MAX_TOOL_LABELS = 100;

/** Distinct model names that get their own `threadline_cost_usd_total` label; later ones count as `other`. */
export const MAX_MODEL_LABELS = 20;

/** The label of tool calls whose tool does not exist (made up by the model) or never worked. */
export const UNKNOWN_TOOL_LABEL = "unknown";

/** The label of real tools beyond {@link MAX_TOOL_LABELS}. */
export const OTHER_TOOL_LABEL = "other";

/** Options of {@link Metrics}. */
export interface MetricsOptions {
  /** Node.js process metrics (`threadline_process_*`, `threadline_nodejs_*`). Default `true`. */
  defaultMetrics?: boolean;
  /** Tool names that always get their own label (the configured tools), up to {@link MAX_TOOL_LABELS}. */
  toolNames?: readonly string[];
}

/**
 * Prometheus metrics of a Threadline process (one registry per process). The tool label set is bounded:
 * a tool name the model made up must not become a time series. A call is labelled with its tool's name
 * when the tool was named in `toolNames` or has completed without error in this process before (a tool
 * that does not exist never does); other calls count as `unknown`, and names past
 * {@link MAX_TOOL_LABELS} as `other`.
 */
export class Metrics {
  readonly registry = new Registry();
  readonly runs = new Counter({
    name: "threadline_runs_total",
    help: "Runs finished, by outcome (completed, stopped, budget, failed, interrupted)",
    labelNames: ["outcome"] as const,
    registers: [this.registry],
  });
  readonly turns = new Counter({
    name: "threadline_turns_total",
    help: "Model turns (assistant messages)",
    registers: [this.registry],
  });
  readonly toolCalls = new Counter({
    name: "threadline_tool_calls_total",
    help: "Tool calls, by tool and outcome (ok, error)",
    labelNames: ["tool", "outcome"] as const,
    registers: [this.registry],
  });
  readonly approvals = new Counter({
    name: "threadline_approvals_total",
    help: "Approval requests, by decision (approved, denied, expired, cancelled)",
    labelNames: ["decision"] as const,
    registers: [this.registry],
  });
  readonly approvalWait = new Histogram({
    name: "threadline_approval_wait_seconds",
    help: "Time a tool call waited for a human decision",
    buckets: [1, 5, 15, 30, 60, 120, 300, 600],
    registers: [this.registry],
  });
  readonly steeringLatency = new Histogram({
    name: "threadline_steering_delivery_seconds",
    help: "From a queued message's arrival to its delivery to the agent",
    buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300],
    registers: [this.registry],
  });
  readonly firstReply = new Histogram({
    name: "threadline_first_visible_reply_seconds",
    help: "From the run's job start to the first message the bot posted",
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30],
    registers: [this.registry],
  });
  readonly cost = new Counter({
    name: "threadline_cost_usd_total",
    help: "Model spend in US dollars, by model (the provider's reported cost, else the price table)",
    labelNames: ["model"] as const,
    registers: [this.registry],
  });
  readonly feedback = new Counter({
    name: "threadline_feedback_total",
    help: "Feedback clicks on answers, by platform and value (positive, negative)",
    labelNames: ["platform", "value"] as const,
    registers: [this.registry],
  });
  private sampler: RunsSampler | undefined;
  private readonly modelLabels = new Set<string>();
  readonly runsActive = new Gauge({
    name: "threadline_runs_active",
    help: "Runs this worker process is executing now (sampled at scrape; sum across processes)",
    registers: [this.registry],
    collect: (): void => this.runsActive.set(this.sampler?.activeThreadIds().length ?? 0),
  });
  readonly inboxDepth = new Gauge({
    name: "threadline_inbox_depth",
    help: "Messages queued (not yet delivered) for the runs this worker process is executing now (sampled at scrape; sum across processes; NaN when Redis did not answer)",
    registers: [this.registry],
    collect: () => this.sampleInboxDepth(),
  });

  private readonly toolLabels = new Set<string>();

  constructor(options: MetricsOptions = {}) {
    if (options.defaultMetrics ?? true)
      collectDefaultMetrics({ register: this.registry, prefix: "threadline_" });
    for (const name of options.toolNames ?? []) this.admitTool(name);
  }

  /** The `tool` label of a call of `tool` that ended with or without error. */
  toolLabel(tool: string, isError: boolean): string {
    if (this.toolLabels.has(tool)) return tool;
    if (isError) return UNKNOWN_TOOL_LABEL;
    return this.admitTool(tool) ? tool : OTHER_TOOL_LABEL;
  }

  /** The `model` label: configured models are few, but a bounded set keeps a misbehaving router in check. */
  private modelLabel(model: string): string {
    if (this.modelLabels.has(model)) return model;
    if (this.modelLabels.size >= MAX_MODEL_LABELS) return OTHER_TOOL_LABEL;
    this.modelLabels.add(model);
    return model;
  }

  private admitTool(tool: string): boolean {
    if (this.toolLabels.size >= MAX_TOOL_LABELS || tool === UNKNOWN_TOOL_LABEL || tool === OTHER_TOOL_LABEL)
      return false;
    this.toolLabels.add(tool);
    return true;
  }

  /**
   * Samples `threadline_runs_active` and `threadline_inbox_depth` from `sampler` at every scrape (a worker
   * process). Without one, both stay 0 (gateway-only processes). Replaces an earlier sampler.
   */
  sampleRuns(sampler: RunsSampler): void {
    this.sampler = sampler;
  }

  /** Reads the inbox depth now; a Redis failure shows as NaN rather than failing the whole scrape. */
  private async sampleInboxDepth(): Promise<void> {
    if (!this.sampler) return;
    try {
      this.inboxDepth.set(await this.sampler.inboxDepth(this.sampler.activeThreadIds()));
    } catch {
      this.inboxDepth.set(Number.NaN);
    }
  }

  /** A run observer that records into these metrics. */
  observer(): RunObserver {
    return {
      runEnded: (outcome) => this.runs.inc({ outcome }),
      turn: () => this.turns.inc(),
      toolCall: (tool, isError) =>
        this.toolCalls.inc({ tool: this.toolLabel(tool, isError), outcome: isError ? "error" : "ok" }),
      delivered: (ms) => this.steeringLatency.observe(ms / 1000),
      firstVisible: (ms) => this.firstReply.observe(ms / 1000),
      cost: (model, usd) => this.cost.inc({ model: this.modelLabel(model) }, usd),
      approval: (decision, ms) => {
        this.approvals.inc({ decision });
        this.approvalWait.observe(ms / 1000);
      },
    };
  }

  /** A platform observer (the gateway's adapters) that records into these metrics. */
  platformObserver(): PlatformObserver {
    return {
      feedback: (platform, value) =>
        this.feedback.inc({ platform, value: value === "positive" ? "positive" : "negative" }),
    };
  }

  /** The exposition text for `/metrics`. */
  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}
