import type { ThreadScripts, Waiting } from "./thread-scripts.js";

/** What a held lease reports to its run. */
export interface LeaseEvents {
  /** The lease is no longer this claim's (expired and taken, or taken over): stop, write nothing more. */
  lost(): void;
  /** The heartbeat read a stop request (JSON of who asked) — the state behind the pub/sub fast path. */
  stopRequested(by: string): void;
  /** Every successful heartbeat: waiters re-read state they might have missed an event for. */
  beat(): void;
  /** The heartbeat read what queued message the loop should yield to now (the state behind the bus event). */
  waiting?(waiting: Waiting): void;
  /** A heartbeat failed on a Redis error (the lease may still be ours: the next beat tells). */
  failed(err: unknown): void;
}

/**
 * A run's claim on its thread: the fencing token the start script handed out, renewed by a heartbeat at a
 * third of the lease. Every fenced script takes {@link Lease.token}; once any of them (or the heartbeat)
 * answers "lost", the lease is gone for good and {@link LeaseEvents.lost} fires once.
 */
export class Lease {
  private timer: NodeJS.Timeout | undefined;
  private lostOnce = false;

  constructor(
    private readonly scripts: ThreadScripts,
    readonly threadId: string,
    /** `<runId>#<n>`: unique per claim. */
    readonly token: string,
    private readonly leaseMs: number,
    private readonly events: LeaseEvents,
  ) {}

  /** True once the lease was lost. */
  get lost(): boolean {
    return this.lostOnce;
  }

  /** Starts renewing. Renew at a third of the lease, whatever its length, so a short lease never lapses between beats. */
  start(): void {
    this.timer = setInterval(() => void this.beat(), Math.max(1, Math.floor(this.leaseMs / 3)));
  }

  /** Stops renewing (the run released the thread or is ending). Idempotent. */
  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Records that a fenced script answered "lost". Idempotent. */
  lose(): void {
    if (this.lostOnce) return;
    this.lostOnce = true;
    this.stop();
    this.events.lost();
  }

  private async beat(): Promise<void> {
    try {
      const reply = await this.scripts.heartbeat(this.threadId, { token: this.token, leaseMs: this.leaseMs });
      if (this.timer === undefined) return; // stopped while the beat was in flight
      if (reply.kind === "lost") {
        this.lose();
        return;
      }
      if (reply.stopBy) this.events.stopRequested(reply.stopBy);
      this.events.waiting?.(reply.waiting);
      this.events.beat();
    } catch (err) {
      this.events.failed(err);
    }
  }
}
