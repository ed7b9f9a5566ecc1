import { existsSync, readFileSync } from "node:fs";
import { readFile, realpath } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { builtinTools, shellTool } from "../../src/tools/index.js";
import { call, tempDir, textOf } from "./helpers.js";

let workspace: string;
let cleanup: () => Promise<void>;

beforeEach(async () => {
  ({ dir: workspace, cleanup } = await tempDir("shell"));
});

afterEach(async () => {
  await cleanup();
});

/** True while the process exists and is not a zombie waiting to be reaped. */
function alive(pid: number): boolean {
  if (existsSync("/proc")) {
    try {
      return !/^\d+ \(.*\) Z /.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
    } catch {
      return false;
    }
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function pidFrom(file: string): Promise<number> {
  await vi.waitFor(async () =>
    expect((await readFile(join(workspace, file), "utf8")).trim()).toMatch(/^\d+$/),
  );
  return Number((await readFile(join(workspace, file), "utf8")).trim());
}

const run = (command: string, options: Parameters<typeof shellTool>[0] = {}, signal?: AbortSignal) =>
  call(
    shellTool({ killGraceMs: 200, ...options }),
    { command },
    { workspaceDir: workspace, ...(signal ? { signal } : {}) },
  );

describe("shell", () => {
  it("runs in the thread workspace and reports the exit code", async () => {
    expect(textOf(await run("pwd"))).toBe(`${await realpath(workspace)}\n[exit code 0]`);
    expect(textOf(await run("echo oops >&2; exit 3"))).toBe("oops\n[exit code 3]");
  });

  it("is off by default and asks for approval by default", () => {
    expect(builtinTools().map((tool) => tool.name)).not.toContain("shell");
    expect(builtinTools({ shell: true }).find((tool) => tool.name === "shell")?.approval).toBe("ask");
  });

  it("scrubs the environment: worker secrets are not visible unless passed on purpose", async () => {
    process.env.THREADLINE_TEST_SECRET = "sk-live-123";
    try {
      expect(textOf(await run('echo "[$THREADLINE_TEST_SECRET] [$HOME]"'))).toBe(
        `[] [${await realpath(workspace)}]\n[exit code 0]`,
      );
      expect(
        textOf(await run('echo "[$THREADLINE_TEST_SECRET]"', { passEnv: ["THREADLINE_TEST_SECRET"] })),
      ).toContain("[sk-live-123]");
    } finally {
      delete process.env.THREADLINE_TEST_SECRET;
    }
  });

  it("caps the output, keeping its head and tail", async () => {
    const text = textOf(await run("seq 1 100000", { maxOutputBytes: 4000 }));
    expect(text.startsWith("1\n2\n3\n")).toBe(true);
    expect(text).toMatch(/\[… \d+ bytes of output omitted …\]/);
    expect(text.endsWith("99999\n100000\n[exit code 0]")).toBe(true);
    expect(text.length).toBeLessThan(4200);
  });

  it("kills the whole process group when the time limit passes", async () => {
    const result = run("sleep 30 & echo $! > child.pid; echo started; wait", { timeoutMs: 300 });
    await expect(result).rejects.toThrow(/timed out after 300 ms and was killed\.\nOutput so far:\nstarted/);
    const child = await pidFrom("child.pid");
    await vi.waitFor(() => expect(alive(child)).toBe(false));
  });

  it("kills the command and its children when the run is aborted", async () => {
    const controller = new AbortController();
    const result = run("sleep 30 & echo $! > child.pid; wait", {}, controller.signal);
    const child = await pidFrom("child.pid");
    expect(alive(child)).toBe(true);
    controller.abort();
    await expect(result).rejects.toThrow(/stopped with the run/);
    await vi.waitFor(() => expect(alive(child)).toBe(false));
  });

  it("does not wait for background processes: they are stopped when the command ends", async () => {
    const text = textOf(await run("sleep 30 & echo $! > bg.pid; echo done"));
    expect(text).toBe("done\n[exit code 0]");
    const background = await pidFrom("bg.pid");
    await vi.waitFor(() => expect(alive(background)).toBe(false));
  });
});
