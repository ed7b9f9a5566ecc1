import type { RunLogger } from "../runs/index.js";

/** Something a process closes on shutdown. `deadlineMs` is the time left until the shutdown deadline. */
export interface Closable {
  close(deadlineMs: number): Promise<void>;
}

/** Exit codes of a shutdown: clean, deadline missed, or cut short by a second signal. */
export const EXIT_CODES = { clean: 0, deadline: 1, SIGINT: 130, SIGTERM: 143, SIGHUP: 129 } as const;

const SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP"] as const;

export interface LifecycleOptions {
  log: RunLogger;
  /** Deadline of a shutdown in ms: at it, the process exits whatever is still closing. */
  deadlineMs: number;
  /** Exits the process; default `process.exit`. */
  exit?: (code: number) => void;
}

/**
 * The process's shutdown. From {@link Lifecycle.listen} on, SIGINT, SIGTERM and SIGHUP are handled: while
 * starting, a signal runs the last-resort cleanups and exits at once; once {@link Lifecycle.started}, the
 * first signal closes the parts in the order they were added, each told the time left, and exits 0 — or
 * exits 1 at the deadline; a second signal exits at once. Last-resort cleanups ({@link Lifecycle.atExit})
 * run on every exit path, the process's `exit` event included (a crash).
 */
export class Lifecycle {
  private readonly parts: Closable[] = [];
  private readonly lastResort: Array<() => void> = [];
  private state: "starting" | "running" | "closing" = "starting";
  private readonly exit: (code: number) => void;

  constructor(private readonly options: LifecycleOptions) {
    this.exit = options.exit ?? ((code) => process.exit(code));
  }

  /** Closed on shutdown, after the parts added before it. */
  add(part: Closable): void {
    this.parts.push(part);
  }

  /** A synchronous cleanup that must happen however the process ends (it must not throw). */
  atExit(cleanup: () => void): void {
    this.lastResort.push(cleanup);
  }

  /** Installs the signal handlers and the `exit` hook. Call once, before starting anything. */
  listen(): void {
    for (const signal of SIGNALS) process.on(signal, () => this.onSignal(signal));
    process.on("exit", () => this.runLastResort());
  }

  /** Everything has started: from now on a signal shuts down gracefully. */
  started(): void {
    if (this.state === "starting") this.state = "running";
  }

  private onSignal(signal: (typeof SIGNALS)[number]): void {
    const { log } = this.options;
    if (this.state === "starting") {
      log.warn({ signal }, "stopped while starting");
      this.finish(EXIT_CODES[signal]);
      return;
    }
    if (this.state === "closing") {
      log.warn({ signal }, "second signal: exiting now");
      this.finish(EXIT_CODES[signal]);
      return;
    }
    this.state = "closing";
    void this.shutdown(signal);
  }

  private async shutdown(signal: string): Promise<void> {
    const { log, deadlineMs } = this.options;
    const until = Date.now() + deadlineMs;
    log.info(
      { signal, deadlineMs },
      `shutting down: finishing running work for up to ${Math.round(deadlineMs / 1000)} s (press Ctrl-C again to exit at once)`,
    );
    const timer = setTimeout(() => {
      log.error({ deadlineMs }, "shutdown did not finish before its deadline (SHUTDOWN_TIMEOUT_MS): exiting");
      this.finish(EXIT_CODES.deadline);
    }, deadlineMs);
    for (const part of this.parts) {
      try {
        await part.close(Math.max(0, until - Date.now()));
      } catch (err) {
        log.error({ err }, "error while shutting down");
      }
    }
    clearTimeout(timer);
    log.info({}, "shut down");
    this.finish(EXIT_CODES.clean);
  }

  private finish(code: number): void {
    this.runLastResort();
    this.exit(code);
  }

  private runLastResort(): void {
    for (const cleanup of this.lastResort.splice(0)) {
      try {
        cleanup();
      } catch {
        // a last resort must not keep the others from running
      }
    }
  }
}
