import { readFileSync } from "node:fs";
import { readdir, readFile, readlink } from "node:fs/promises";
import { resolve } from "node:path";

/** True when a process `pid` exists and is not a zombie. Never throws. */
export function isAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  try {
    // Linux: "pid (comm) S …"; a zombie (Z) has exited but was not reaped yet.
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return true;
  }
}

/**
 * Pids of redis-server processes whose working directory is `dir` (redis-server changes into its `--dir`).
 * Linux only (it reads /proc); elsewhere always empty. Never throws.
 */
export async function redisServersIn(dir: string): Promise<number[]> {
  const target = resolve(dir);
  const entries = await readdir("/proc").catch(() => [] as string[]);
  const pids: number[] = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    const cwd = await readlink(`/proc/${entry}/cwd`).catch(() => "");
    if (cwd !== target) continue;
    const comm = await readFile(`/proc/${entry}/comm`, "utf8").catch(() => "");
    if (comm.trim() === "redis-server" && isAlive(Number(entry))) pids.push(Number(entry));
  }
  return pids;
}

/**
 * False only when `pid` is known not to be a Node.js process (Linux: its /proc `comm`); true where that
 * cannot be read. Tells a live lock owner from a recycled pid. Never throws.
 */
export function isNode(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/comm`, "utf8").trim().startsWith("node");
  } catch {
    return true;
  }
}
