import { type ChildProcess, spawn } from "node:child_process";
import { resolve } from "node:path";

const ROOT = resolve(import.meta.dirname, "../..");

/** Children still running; killed when this process exits so none is left behind. */
const live = new Set<ChildProcess>();
process.on("exit", () => {
  for (const child of live) child.kill("SIGKILL");
});

/** Appends every complete stdout/stderr line of `child` to `lines` (a partial last line waits for its end). */
export function collectLines(child: ChildProcess, lines: string[]): void {
  let buffer = "";
  const onData = (data: Buffer) => {
    buffer += data.toString("utf8");
    const parts = buffer.split("\n");
    buffer = parts.pop() ?? "";
    lines.push(...parts);
  };
  child.stdout?.on("data", onData);
  child.stderr?.on("data", onData);
}

/** A `threadline` CLI process (gateway or worker) started from the sources with tsx. */
export class CliProcess {
  /** Every stdout/stderr line so far (JSON logs and anything else). */
  readonly lines: string[] = [];
  private readonly exited: Promise<number | null>;

  private constructor(
    readonly role: string,
    private readonly child: ChildProcess,
  ) {
    collectLines(child, this.lines);
    live.add(child);
    this.exited = new Promise((done) =>
      child.on("exit", (code) => {
        live.delete(child);
        done(code);
      }),
    );
  }

  /**
   * Starts `node --import tsx src/app/cli.ts <role>` (or, `from` the build, `node dist/app/cli.js <role>`) with
   * exactly `env` (plus PATH/HOME, and OPS_PORT=0 unless `env` sets it), and resolves once
   * a log line contains `readyText`. Rejects with the output (and kills the process) when it exits or is
   * not ready in `timeoutMs`.
   */
  static async start(
    role: string,
    env: Record<string, string>,
    readyText: string,
    timeoutMs = 45_000,
    from: "sources" | "build" = "sources",
  ) {
    const entry = from === "build" ? ["dist/app/cli.js"] : ["--import", "tsx", "src/app/cli.ts"];
    const child = spawn(process.execPath, [...entry, role], {
      cwd: ROOT,
      // OPS_PORT 0 unless the test names one: gateway and worker would both take the default 9464, and a taken
      // ops port stops start-up.
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", OPS_PORT: "0", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const proc = new CliProcess(role, child);
    try {
      await proc.waitForLine(readyText, timeoutMs);
    } catch (err) {
      child.kill("SIGKILL");
      throw err;
    }
    return proc;
  }

  /** Starts several processes; when one fails, stops the others and rethrows (no orphans). */
  static async startAll(starts: Promise<CliProcess>[]): Promise<CliProcess[]> {
    const settled = await Promise.allSettled(starts);
    const failed = settled.find((result) => result.status === "rejected");
    if (failed === undefined)
      return settled.map((result) => (result as PromiseFulfilledResult<CliProcess>).value);
    await Promise.all(
      settled.map((result) => (result.status === "fulfilled" ? result.value.stop() : Promise.resolve())),
    );
    throw (failed as PromiseRejectedResult).reason;
  }

  /** Resolves when a line contains `text`. */
  async waitForLine(text: string, timeoutMs = 15_000): Promise<string> {
    const started = Date.now();
    for (;;) {
      const line = this.lines.find((candidate) => candidate.includes(text));
      if (line !== undefined) return line;
      const exited = await Promise.race([this.exited.then(() => true), sleep(25).then(() => false)]);
      if (exited || Date.now() - started > timeoutMs) {
        throw new Error(`${this.role} ${exited ? "exited" : "not ready"}; output:\n${this.lines.join("\n")}`);
      }
    }
  }

  /** Log lines (parsed JSON) whose `msg` contains `text`. */
  logs(text: string): Record<string, unknown>[] {
    return this.lines
      .filter((line) => line.startsWith("{") && line.includes(text))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  }

  /** SIGTERM, then SIGKILL after `graceMs`; resolves when the process is gone. */
  async stop(graceMs = 3000): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.kill("SIGTERM");
    const timer = setTimeout(() => this.child.kill("SIGKILL"), graceMs);
    await this.exited;
    clearTimeout(timer);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
