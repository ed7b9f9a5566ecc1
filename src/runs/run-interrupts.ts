import {
  type AgentMessage,
  InterruptLatch,
  type InterruptNotice,
  type InterruptSource,
} from "../agent/index.js";
import type { Waiting } from "./thread-scripts.js";

/**
 * A run's {@link InterruptSource}: what queued message its loop must yield to now. The bus event the
 * gateway publishes when a steer or interrupt is queued (or a queued message switched to one) is the fast
 * path and aborts the model stream / interruptible tools at once; the disposition in Redis is the state,
 * read again by every heartbeat, every drain and after the bus reconnects, so a lost event costs at most one
 * heartbeat, never the message (the message itself is always drained from Redis).
 *
 * What waits is kept as two flags. They are set by events and by state reads, and cleared only right before
 * the drain that takes that kind: the drain's reply sets them again when more is waiting, so an event that
 * crosses a drain in flight is never lost (a stale flag costs one empty `take`, never a missed message).
 */
export class RunInterrupts {
  private interruptWaiting = false;
  private steerWaiting = false;
  /** The loop's last steering poll took nothing, and no model request was made since. */
  private steeringPolledEmpty = false;
  private readonly latch = new InterruptLatch((phase) =>
    phase === "stream" ? this.interruptWaiting : this.interruptWaiting || this.steerWaiting,
  );
  /** The hook the run's loop config gets. */
  readonly source: InterruptSource;

  /** `drainInterrupts` takes every queued interrupt of the run (the session's fenced drain). */
  constructor(drainInterrupts: () => Promise<AgentMessage[]>) {
    this.source = {
      signal: (phase) => this.latch.signal(phase),
      take: async () => {
        // Nothing announced, nothing read: skip the round trip (a missed event is read on the next heartbeat).
        if (!this.interruptWaiting) return [];
        this.beforeDrain("interrupt");
        return drainInterrupts();
      },
    };
  }

  /**
   * The loop's steering poll (`getSteeringMessages`), `drainSteering` being the session's fenced drain. The
   * loop polls after every turn and, when that poll was empty, again as the next turn starts (docs/agent-loop.md
   * §2.2.1b: for steering queued while a slow `prepareNextTurn` ran; runs have none, so the two polls are a
   * microtask apart). A poll right after an empty one, with no model request and no other drain in between
   * and no steer announced since, takes nothing without a round trip: a steer queued meanwhile is announced
   * by its bus event (or read on the next heartbeat), like an interrupt. `drainSteering` must call
   * {@link beforeDrain}, as the session's drain does.
   */
  async pollSteering(drainSteering: () => Promise<AgentMessage[]>): Promise<AgentMessage[]> {
    if (this.steeringPolledEmpty && !this.steerWaiting) return [];
    const taken = await drainSteering();
    this.steeringPolledEmpty = taken.length === 0;
    return taken;
  }

  /** A model request starts: the next steering poll reads Redis again. */
  requestStarted(): void {
    this.steeringPolledEmpty = false;
  }

  /** A bus event: a message of `kind` (from `by`) was queued for this run. */
  arrived(kind: "steer" | "interrupt", by: string | undefined): void {
    const notice: InterruptNotice = by ? { by } : {};
    if (kind === "interrupt") {
      this.interruptWaiting = true;
      this.latch.interrupt(notice);
    } else {
      this.steerWaiting = true;
      this.latch.steer(notice);
    }
  }

  /** State read from Redis (heartbeat, drain reply, reconnect): only ever adds what it finds waiting. */
  observe(waiting: Waiting): void {
    if (waiting.kind === "interrupt" && !this.interruptWaiting) this.arrived("interrupt", waiting.by);
    else if (waiting.kind === "steer" && !this.steerWaiting) this.arrived("steer", waiting.by);
  }

  /**
   * A drain of `kind` is about to run: what it takes no longer waits (its reply says what still does). Any
   * drain also ends what {@link pollSteering} skips: the next steering poll reads Redis again.
   */
  beforeDrain(kind: string): void {
    this.steeringPolledEmpty = false;
    if (kind === "interrupt") this.interruptWaiting = false;
    else if (kind === "steer") this.steerWaiting = false;
  }
}
