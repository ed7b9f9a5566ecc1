import { type ChildProcess, spawn } from "node:child_process";
import { appendFileSync } from "node:fs";
import { resolve } from "node:path";
import { track } from "./children.js";

const ROOT = resolve(import.meta.dirname, "../..");

/** Log messages worth counting in a chaos run (substring of pino's `msg`). */
const COUNTED = [
  "run failed",
  "lost the thread lease",
  "run job is stale",
  "lease heartbeat failed",
  "playground request failed",
  "chat update failed",
] as const;

/** What a {@link CliChild} is doing now. */
export type ChildState = "starting" | "running" | "paused" | "dead";

/**
 * One `threadline <role>` process started from the sources (`node --import tsx src/app/cli.ts <role>`),
 * which the chaos run can SIGKILL, SIGSTOP / SIGCONT and start again with the same environment. Keeps the
 * last lines of output for diagnostics and counts {@link COUNTED} log messages across restarts.
 */
export class CliChild {
  state: ChildState = "dead";
  /** Starts so far (the first one included). */
  starts = 0;
  /** Counted log messages, summed over every start. */
  readonly counted = new Map<string, number>();
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  private tail: string[] = [];

  constructor(
    readonly name: string,
    private readonly role: "worker" | "gateway",
    private readonly env: Record<string, string>,
    private readonly readyText: string,
    /** When set, every line of output (all starts) is appended to this file. */
    private readonly logFile?: string,
  ) {}

  /** Spawns the process and resolves once it logged its ready line. @throws when it exits or is not ready in 60 s. */
  async start(): Promise<void> {
    if (this.state !== "dead") throw new Error(`${this.name} is ${this.state}`);
    this.state = "starting";
    this.starts++;
    const child = spawn(process.execPath, ["--import", "tsx", "src/app/cli.ts", this.role], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...this.env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    track(child);
    this.child = child;
    let ready!: () => void;
    const isReady = new Promise<void>((done) => {
      ready = done;
    });
    let buffer = "";
    const onData = (data: Buffer) => {
      if (this.logFile) appendFileSync(this.logFile, data);
      buffer += data.toString("utf8");
      const lines = buffer.split("\n");
      buffer = lines.pop() ?? "";
      for (const line of lines) this.onLine(line, ready);
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    this.exited = new Promise((done) =>
      child.once("exit", () => {
        if (this.child === child) this.state = "dead";
        done();
      }),
    );
    let timer: NodeJS.Timeout | undefined;
    const failed = Promise.race([
      this.exited.then(() => "exited"),
      new Promise<string>((done) => {
        timer = setTimeout(() => done("not ready after 60 s"), 60_000);
      }),
    ]);
    const outcome = await Promise.race([isReady.then(() => "ready"), failed]);
    clearTimeout(timer);
    if (outcome !== "ready") {
      await this.kill();
      throw new Error(`${this.name} ${outcome}; last output:\n${this.tail.join("\n")}`);
    }
    this.state = "running";
  }

  /** SIGKILL (also ends a paused process); resolves once it is gone. */
  async kill(): Promise<void> {
    if (this.child && this.child.exitCode === null && this.child.signalCode === null)
      this.child.kill("SIGKILL");
    await this.exited;
    this.state = "dead";
  }

  /** SIGSTOP: the process freezes (timers, sockets, heartbeats) until {@link resume}. */
  pause(): void {
    if (this.state !== "running") return;
    this.child?.kill("SIGSTOP");
    this.state = "paused";
  }

  /** SIGCONT after {@link pause}. */
  resume(): void {
    if (this.state !== "paused") return;
    this.child?.kill("SIGCONT");
    this.state = "running";
  }

  /** The last lines of output (for a failure report). */
  lastLines(): string[] {
    return [...this.tail];
  }

  private onLine(line: string, ready: () => void): void {
    this.tail.push(line);
    if (this.tail.length > 60) this.tail = this.tail.slice(-40);
    if (line.includes(this.readyText)) ready();
    for (const text of COUNTED)
      if (line.includes(`"msg":"${text}`)) this.counted.set(text, (this.counted.get(text) ?? 0) + 1);
  }
}
