import type { CliChild } from "./processes.js";
import type { PrivateRedis } from "./redis-server.js";

/** How much chaos to apply, at random times inside `windowMs`. */
export interface ChaosPlan {
  kills: number;
  pauses: number;
  restarts: number;
  outages: number;
  windowMs: number;
  /** SIGSTOP length, min and max (ms): longer than the workers' 30 s lease and job lock. */
  pauseMs: [number, number];
  /** Redis down-time of an outage, min and max (ms). */
  outageMs: [number, number];
}

/** What was actually done. */
export interface ChaosApplied {
  kills: number;
  pauses: number;
  pausedSeconds: number;
  restarts: number;
  outages: number;
  outageSeconds: number;
  /** Planned worker events skipped because no worker was running at that moment. */
  skipped: number;
  /** Worker starts that failed and were retried. */
  failedStarts: number;
}

type Kind = "kill" | "pause" | "restart" | "outage";

/**
 * Applies a {@link ChaosPlan} to the worker processes and the private Redis: SIGKILL of a random running
 * worker (started again 0.5–2 s later), SIGSTOP of one for longer than its lease (then SIGCONT), Redis
 * SHUTDOWN and start again from the same AOF (a restart: back at once; an outage: down for a few seconds
 * while traffic keeps arriving). Event times come from the seeded random source; Redis events never
 * overlap. `stop` cuts waits short and `settle` leaves every worker running and Redis up.
 */
export class Chaos {
  readonly applied: ChaosApplied = {
    kills: 0,
    pauses: 0,
    pausedSeconds: 0,
    restarts: 0,
    outages: 0,
    outageSeconds: 0,
    skipped: 0,
    failedStarts: 0,
  };
  private readonly stopping = new AbortController();
  private readonly events: { atMs: number; kind: Kind }[] = [];

  constructor(
    private readonly workers: CliChild[],
    private readonly redis: PrivateRedis,
    private readonly random: () => number,
    private readonly plan: ChaosPlan,
    private readonly log: (line: string) => void,
  ) {
    const add = (kind: Kind, count: number) => {
      // Between 5 % and 80 % of the window, so the last events have time to recover before traffic ends;
      // a pause also ends inside the window (it is cut short at its end).
      const first = plan.windowMs * 0.05;
      const last = kind === "pause" ? Math.max(first, plan.windowMs - plan.pauseMs[1]) : plan.windowMs * 0.8;
      for (let i = 0; i < count; i++) this.events.push({ atMs: first + (last - first) * random(), kind });
    };
    add("kill", plan.kills);
    add("pause", plan.pauses);
    add("restart", plan.restarts);
    add("outage", plan.outages);
    this.events.sort((a, b) => a.atMs - b.atMs);
  }

  /** The planned events, e.g. `kill@12.3s` (the same seed and options plan the same events). */
  planned(): string[] {
    return this.events.map((event) => `${event.kind}@${(event.atMs / 1000).toFixed(1)}s`);
  }

  /** Applies every planned event (or until {@link stop}); resolves when all of them are over. */
  async run(): Promise<void> {
    const started = performance.now();
    const running: Promise<void>[] = [];
    let redisChain = Promise.resolve();
    for (const event of this.events) {
      await this.sleep(started + event.atMs - performance.now());
      if (this.stopped) break;
      if (event.kind === "restart" || event.kind === "outage") {
        redisChain = redisChain.then(() => this.redisEvent(event.kind === "outage"));
      } else running.push(event.kind === "kill" ? this.kill() : this.pause());
    }
    await Promise.all([...running, redisChain]);
  }

  /** Cuts every wait short: paused workers resume, killed ones restart, Redis comes back. */
  stop(): void {
    this.stopping.abort();
  }

  /** After {@link run}: every worker running, Redis up. */
  async settle(): Promise<void> {
    await this.redis.up();
    for (const worker of this.workers) worker.resume();
    await Promise.all(this.workers.filter((w) => w.state === "dead").map((w) => this.startWorker(w)));
  }

  private get stopped(): boolean {
    return this.stopping.signal.aborted;
  }

  private pick(): CliChild | undefined {
    const running = this.workers.filter((worker) => worker.state === "running");
    if (running.length === 0) {
      this.applied.skipped++;
      return undefined;
    }
    return running[Math.floor(this.random() * running.length)];
  }

  private async kill(): Promise<void> {
    const worker = this.pick();
    if (!worker) return;
    await worker.kill();
    this.applied.kills++;
    this.log(`chaos: SIGKILL ${worker.name}`);
    await this.sleep(500 + this.random() * 1500);
    await this.startWorker(worker);
  }

  private async pause(): Promise<void> {
    // Keep one worker unpaused so the run can take over the stalled jobs.
    if (this.workers.filter((worker) => worker.state === "paused").length >= this.workers.length - 1) {
      this.applied.skipped++;
      return;
    }
    const worker = this.pick();
    if (!worker) return;
    const [min, max] = this.plan.pauseMs;
    const ms = min + this.random() * (max - min);
    worker.pause();
    this.applied.pauses++;
    this.log(`chaos: SIGSTOP ${worker.name} for ${(ms / 1000).toFixed(1)} s`);
    const started = performance.now();
    await this.sleep(ms);
    worker.resume();
    this.applied.pausedSeconds += (performance.now() - started) / 1000;
  }

  private async redisEvent(outage: boolean): Promise<void> {
    if (this.stopped) return;
    const [min, max] = this.plan.outageMs;
    const downMs = outage ? min + this.random() * (max - min) : 0;
    const started = performance.now();
    await this.redis.down();
    this.log(outage ? `chaos: Redis down for ${(downMs / 1000).toFixed(1)} s` : "chaos: Redis restart");
    if (downMs > 0) await this.sleep(downMs);
    await this.redis.up();
    if (outage) {
      this.applied.outages++;
      this.applied.outageSeconds += (performance.now() - started) / 1000;
    } else this.applied.restarts++;
  }

  /** Starts a killed worker; a start that fails (e.g. Redis was down at that moment) is retried. */
  private async startWorker(worker: CliChild): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await worker.start();
        return;
      } catch (err) {
        this.applied.failedStarts++;
        if (attempt >= 10) throw err;
        await new Promise((resolve) => setTimeout(resolve, 1000));
      }
    }
  }

  private sleep(ms: number): Promise<void> {
    if (ms <= 0 || this.stopped) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      const signal = this.stopping.signal;
      function done() {
        clearTimeout(timer);
        signal.removeEventListener("abort", done);
        resolve();
      }
      signal.addEventListener("abort", done, { once: true });
    });
  }
}
