import { type ChildProcess, fork } from "node:child_process";

/** What a bench child tells its parent over IPC. */
export type ChildMessage =
  | { type: "ready"; baseURL?: string }
  | { type: "result"; data: unknown }
  | { type: "error"; message: string };

/** Sends a message to the parent (no-op without an IPC channel). */
export function sendToParent(message: ChildMessage): void {
  process.send?.(message);
}

/**
 * A bench child process (`entry` re-invoked with `argv`, so its CPU and RSS are its own), read as a
 * stream of {@link ChildMessage}s.
 */
export class Child {
  readonly process: ChildProcess;
  private readonly inbox: ChildMessage[] = [];
  private waiter: (() => void) | undefined;
  private exitCode: number | null | undefined;

  constructor(
    readonly kind: string,
    entry: string,
    argv: string[],
    execArgv: string[] = process.execArgv,
  ) {
    this.process = fork(entry, argv, { execArgv });
    this.process.on("message", (message) => {
      this.inbox.push(message as ChildMessage);
      this.waiter?.();
    });
    this.process.once("exit", (code) => {
      this.exitCode = code;
      this.waiter?.();
    });
  }

  get running(): boolean {
    return this.exitCode === undefined;
  }

  /** The next message of `type`; throws on a child error, exit or timeout. */
  async next<T extends ChildMessage["type"]>(
    type: T,
    timeoutMs: number,
  ): Promise<Extract<ChildMessage, { type: T }>> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const message = this.inbox.shift();
      if (message?.type === "error") throw new Error(`${this.kind} child failed: ${message.message}`);
      if (message?.type === type) return message as Extract<ChildMessage, { type: T }>;
      if (message) continue;
      if (!this.running) throw new Error(`${this.kind} child exited (${this.exitCode}) before "${type}"`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`${this.kind} child: no "${type}" within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiter = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.waiter = undefined;
    }
  }

  async result<T>(timeoutMs: number): Promise<T> {
    return (await this.next("result", timeoutMs)).data as T;
  }

  /** Waits for the child to exit (killing it after `graceMs`). */
  async stop(graceMs = 5_000): Promise<void> {
    if (!this.running) return;
    const exited = new Promise<void>((resolve) => this.process.once("exit", () => resolve()));
    if (this.process.connected) this.process.disconnect();
    const timer = setTimeout(() => this.process.kill("SIGKILL"), graceMs);
    await exited;
    clearTimeout(timer);
  }
}

/** Options of {@link runAsChild}. */
export interface ChildRunOptions {
  /** Exit (code 3) after this long, and as soon as the parent goes away. Default: neither. */
  deadlineMs?: number;
  /** Keep running after `body` resolves (a server child that lives until the parent disconnects). */
  stayAlive?: boolean;
}

/**
 * The child side: runs `body`, reports a failure to the parent as an `error` message (exit code 1), then
 * lets the IPC message flush and leaves (also when some handle would keep the loop alive).
 */
export async function runAsChild(kind: string, body: () => Promise<void>, options: ChildRunOptions = {}) {
  if (options.deadlineMs !== undefined) {
    process.on("disconnect", () => process.exit(0));
    setTimeout(() => {
      console.error(`[${kind}] child deadline reached; exiting`);
      process.exit(3);
    }, options.deadlineMs).unref();
  }
  try {
    await body();
    if (options.stayAlive) return;
  } catch (err) {
    sendToParent({ type: "error", message: err instanceof Error ? (err.stack ?? err.message) : String(err) });
    process.exitCode = 1;
  }
  setTimeout(() => process.exit(), 50);
}
