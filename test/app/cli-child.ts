import { type ChildProcess, spawn } from "node:child_process";
import { readdir, readlink } from "node:fs/promises";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { collectLines } from "../support/process.js";

const ROOT = resolve(import.meta.dirname, "../..");
/** tsx by path: the child runs in folders without node_modules. */
const TSX = pathToFileURL(resolve(ROOT, "node_modules/tsx/dist/loader.mjs")).href;

/** Children still running; killed (with their process group) when the test process exits. */
const live = new Set<ChildProcess>();
process.on("exit", () => {
  for (const child of live) {
    try {
      process.kill(-(child.pid ?? 0), "SIGKILL");
    } catch {
      // gone
    }
  }
});

/**
 * A `threadline <role>` CLI process started from the sources (`node --import tsx`) in `cwd`, as the leader
 * of its own process group — as a shell runs a foreground job, so {@link CliChild.ctrlC} reaches every
 * process of the group, the way a terminal's Ctrl-C does.
 */
export class CliChild {
  readonly lines: string[] = [];
  /** Resolves with the exit code (or the signal) once the process is gone. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  private constructor(private readonly child: ChildProcess) {
    collectLines(child, this.lines);
    live.add(child);
    this.exited = new Promise((done) =>
      child.on("exit", (code, signal) => {
        live.delete(child);
        done({ code, signal });
      }),
    );
  }

  static spawn(role: string, cwd: string, env: Record<string, string>): CliChild {
    const child = spawn(process.execPath, ["--import", TSX, resolve(ROOT, "src/app/cli.ts"), role], {
      cwd,
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...env },
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    return new CliChild(child);
  }

  /** Any command (`npm start`) in `cwd`, leading its own process group like {@link CliChild.spawn}. */
  static spawnCommand(command: string, args: string[], cwd: string, env: Record<string, string>): CliChild {
    const child = spawn(command, args, {
      cwd,
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...env },
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    return new CliChild(child);
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  /** Resolves with the first line containing `text`; rejects with the output when the process exits first. */
  async waitForLine(text: string, timeoutMs = 60_000): Promise<string> {
    const until = Date.now() + timeoutMs;
    let gone = false;
    void this.exited.then(() => {
      gone = true;
    });
    for (;;) {
      const line = this.lines.find((candidate) => candidate.includes(text));
      if (line !== undefined) return line;
      if (gone || Date.now() > until)
        throw new Error(`no "${text}" (${gone ? "exited" : "timed out"}); output:\n${this.lines.join("\n")}`);
      await sleep(25);
    }
  }

  /** SIGINT to the whole process group: what a terminal's Ctrl-C does. */
  ctrlC(): void {
    process.kill(-this.pid, "SIGINT");
  }

  /** A signal to the process alone (an orchestrator's stop, a crash). */
  signal(name: NodeJS.Signals): void {
    process.kill(this.pid, name);
  }

  /** The exit, or `"still running"` after `ms`. */
  async exitWithin(
    ms: number,
  ): Promise<{ code: number | null; signal: NodeJS.Signals | null } | "still running"> {
    return Promise.race([this.exited, sleep(ms).then(() => "still running" as const)]);
  }

  /** Kills the whole group (test cleanup). */
  kill(): void {
    try {
      process.kill(-this.pid, "SIGKILL");
    } catch {
      // gone
    }
  }
}

/** Pids of processes working in `dir` or below (redis-server rewrites its command line, not its cwd). */
export async function processesIn(dir: string): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const cwd = await readlink(`/proc/${entry}/cwd`).catch(() => "");
    if (cwd.startsWith(dir)) pids.push(Number(entry));
  }
  return pids;
}

/** Polls `check` until it is true or `ms` passed; resolves with its last value. */
export async function eventually(check: () => Promise<boolean>, ms: number): Promise<boolean> {
  const until = Date.now() + ms;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > until) return false;
    await sleep(50);
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
