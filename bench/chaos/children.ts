import type { ChildProcess } from "node:child_process";
import { rmSync } from "node:fs";

/**
 * Every child process and temporary directory of a chaos run, so none outlives it: on process exit (normal,
 * thrown error, `process.exit`) every child still alive gets SIGKILL — which also ends a SIGSTOPped one — and
 * the directories are removed. {@link exitOnSignals} does the same on Ctrl-C / SIGTERM / SIGHUP.
 */
const children = new Set<ChildProcess>();
const directories = new Set<string>();
let hooked = false;

function hook(): void {
  if (hooked) return;
  hooked = true;
  process.on("exit", cleanUpNow);
}

/** Tracks `child` until it exits. */
export function track(child: ChildProcess): void {
  hook();
  children.add(child);
  child.once("exit", () => children.delete(child));
}

/** Removes `dir` (recursively) when the process exits, unless {@link forget} was called first. */
export function removeOnExit(dir: string): void {
  hook();
  directories.add(dir);
}

/** Removes `dir` now and forgets it. */
export function removeNow(dir: string): void {
  directories.delete(dir);
  rmSync(dir, { recursive: true, force: true });
}

/** SIGKILLs every tracked child still alive and removes the tracked directories. Synchronous, never throws. */
export function cleanUpNow(): void {
  for (const child of children) {
    try {
      child.kill("SIGKILL");
    } catch {
      // already gone
    }
  }
  for (const dir of directories) {
    try {
      rmSync(dir, { recursive: true, force: true });
    } catch {
      // best effort
    }
  }
  directories.clear();
}

/** On SIGINT, SIGTERM or SIGHUP: clean up and exit with 128 + the signal number. For the CLI entry only. */
export function exitOnSignals(): void {
  const numbers: Record<string, number> = { SIGHUP: 1, SIGINT: 2, SIGTERM: 15 };
  for (const [signal, number] of Object.entries(numbers)) {
    process.once(signal, () => {
      process.stderr.write(`\nchaos: ${signal}, stopping every child process\n`);
      cleanUpNow();
      process.exit(128 + number);
    });
  }
}
