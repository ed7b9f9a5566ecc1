import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import type { RunObserver } from "../runs/index.js";

/** Prometheus metrics of a Threadline process (one registry per process). */
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
  readonly inboxDepth = new Gauge({
    name: "threadline_inbox_depth",
    help: "Messages queued for active runs when last sampled by the gateway",
    registers: [this.registry],
  });

  constructor(options: { defaultMetrics?: boolean } = {}) {
    if (options.defaultMetrics ?? true)
      collectDefaultMetrics({ register: this.registry, prefix: "threadline_" });
  }

  /** A run observer that records into these metrics. */
  observer(): RunObserver {
    return {
      runEnded: (outcome) => this.runs.inc({ outcome }),
      turn: () => this.turns.inc(),
      toolCall: (tool, isError) => this.toolCalls.inc({ tool, outcome: isError ? "error" : "ok" }),
      delivered: (ms) => this.steeringLatency.observe(ms / 1000),
      firstVisible: (ms) => this.firstReply.observe(ms / 1000),
      approval: (decision, ms) => {
        this.approvals.inc({ decision });
        this.approvalWait.observe(ms / 1000);
      },
    };
  }

  /** The exposition text for `/metrics`. */
  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}
