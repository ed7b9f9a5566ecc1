import { execFile } from "node:child_process";
import { randomInt } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { mkdir, readFile, realpath, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { builtinTools, probeBwrap, type ShellOptions, shellTool } from "../../src/tools/index.js";
import { call, tempDir, textOf } from "./helpers.js";

const execFileAsync = promisify(execFile);
const RUNNER = resolve(import.meta.dirname, "shell-runner.ts");

let root: string;
let workspace: string;
let cleanup: () => Promise<void>;

beforeEach(async () => {
  ({ dir: root, cleanup } = await tempDir("shell"));
  workspace = join(root, "workspace");
  await mkdir(workspace);
});

afterEach(async () => {
  await cleanup();
});

/**
 * Host processes (not zombies) whose command line is exactly `argv`. Sandboxed commands live in their own
 * PID namespace, so the pids they print are not the host's; a unique argument finds them instead.
 */
function hostProcesses(argv: string[]): number[] {
  const wanted = `${argv.join("\0")}\0`;
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, "utf8") !== wanted) continue;
      if (/^\d+ \(.*\) Z /.test(readFileSync(`/proc/${entry}/stat`, "utf8"))) continue;
      found.push(Number(entry));
    } catch {
      // exited meanwhile
    }
  }
  return found;
}

/** A `sleep` command line no other process has: `sleep 30.<random>`. */
const uniqueSleep = () => ["sleep", `30.${randomInt(1e9)}`];

/** Shell code that starts `prefix sleep …` in the background and waits until it runs as `sleep`. */
const startInBackground = (argv: string[], prefix = "") =>
  `${prefix}${argv.join(" ")} & p=$!; until grep -qs '^sleep' /proc/$p/cmdline; do :; done`;

const run = (command: string, options: ShellOptions = {}, signal?: AbortSignal) =>
  call(
    shellTool({ killGraceMs: 200, ...options }),
    { command },
    { workspaceDir: workspace, ...(signal ? { signal } : {}) },
  );

/** Runs one tool call in a separate worker-like process whose environment holds `env`. */
async function runInWorker(command: string, env: Record<string, string>, options: ShellOptions = {}) {
  const { stdout } = await execFileAsync(
    process.execPath,
    ["--import", "tsx", RUNNER, JSON.stringify({ command, workspace, options })],
    { env: { ...process.env, ...env } },
  );
  return JSON.parse(stdout) as { text?: string; error?: string };
}

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

  it("cannot read the worker's environment through /proc (the sandbox has its own PID namespace)", async () => {
    const secret = `sk-fake-${randomInt(1e9)}`;
    const result = await runInWorker(
      "tr '\\0' '\\n' < /proc/$PPID/environ; cat /proc/[0-9]*/environ | tr '\\0' '\\n'; ls /proc | grep -c '^[0-9]'",
      { OPENAI_API_KEY: secret, SLACK_BOT_TOKEN: `xoxb-${secret}` },
    );
    expect(result.error).toBeUndefined();
    expect(result.text).toContain("PATH=");
    expect(result.text).not.toContain(secret);
  });

  it("kills every process of the command when it ends, including setsid children", async () => {
    const detached = uniqueSleep();
    const background = uniqueSleep();
    const text = textOf(
      await run(`${startInBackground(detached, "setsid ")}; ${startInBackground(background)}; echo started`),
    );
    expect(text).toBe("started\n[exit code 0]");
    await vi.waitFor(() => expect(hostProcesses(detached)).toEqual([]));
    expect(hostProcesses(background)).toEqual([]);
  });

  it("kills the command and its setsid children when the time limit passes", async () => {
    const sleep = uniqueSleep();
    const result = run(`${startInBackground(sleep, "setsid ")}; echo started; wait`, {
      timeoutMs: 500,
    });
    await expect(result).rejects.toThrow(/timed out after 500 ms and was killed\.\nOutput so far:\nstarted/);
    await vi.waitFor(() => expect(hostProcesses(sleep)).toEqual([]));
  });

  it("kills the command and its children when the run is aborted", async () => {
    const controller = new AbortController();
    const sleep = uniqueSleep();
    const result = run(`${sleep.join(" ")} & wait`, {}, controller.signal);
    await vi.waitFor(() => expect(hostProcesses(sleep)).toHaveLength(1));
    controller.abort();
    await expect(result).rejects.toThrow(/stopped with the run/);
    await vi.waitFor(() => expect(hostProcesses(sleep)).toEqual([]));
  });

  it("can write the workspace but nothing outside it, and cannot see files next to it", async () => {
    await writeFile(join(root, "secret.txt"), "top secret");
    const text = textOf(
      await run(
        [
          "echo made > made.txt && echo workspace-ok",
          "echo x > ../escaped.txt",
          "touch /usr/threadline-escape 2>/dev/null || echo usr-refused",
          "cat ../secret.txt 2>/dev/null || echo secret-hidden",
        ].join("; "),
      ),
    );
    expect(text).toContain("workspace-ok");
    expect(text).toContain("usr-refused");
    expect(text).toContain("secret-hidden");
    expect(text).not.toContain("top secret");
    expect(await readFile(join(workspace, "made.txt"), "utf8")).toBe("made\n");
    // The parent directory the command wrote to is the sandbox's private /tmp, not the host's.
    await expect(readFile(join(root, "escaped.txt"), "utf8")).rejects.toThrow(/ENOENT/);
  });

  it("caps the output, keeping its head and tail", async () => {
    const text = textOf(await run("seq 1 100000", { maxOutputBytes: 4000 }));
    expect(text.startsWith("1\n2\n3\n")).toBe(true);
    expect(text).toMatch(/\[… \d+ bytes of output omitted …\]/);
    expect(text.endsWith("99999\n100000\n[exit code 0]")).toBe(true);
    expect(text.length).toBeLessThan(4200);
  });
});

describe("shell without a sandbox", () => {
  it("refuses to run when bubblewrap is missing, instead of running unsandboxed", async () => {
    await expect(run("echo ran > ran.txt", { bwrapPath: "/nonexistent/bwrap" })).rejects.toThrow(
      'The shell is not available: bubblewrap ("/nonexistent/bwrap") was not found. Commands only run sandboxed',
    );
    await expect(readFile(join(workspace, "ran.txt"), "utf8")).rejects.toThrow(/ENOENT/);
  });

  it("reports bubblewrap missing from PATH at the probe", async () => {
    expect(await probeBwrap({}, "/nonexistent")).toEqual({
      available: false,
      reason: 'bubblewrap ("bwrap") was not found on PATH',
    });
    expect(await probeBwrap()).toMatchObject({ available: true, sandbox: { bwrap: expect.any(String) } });
  });

  it('runs directly only when the operator chose sandbox: "none"', async () => {
    const text = textOf(await run("echo unsandboxed", { sandbox: "none", bwrapPath: "/nonexistent/bwrap" }));
    expect(text).toBe("unsandboxed\n[exit code 0]");
  });
});
