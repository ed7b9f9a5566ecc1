import { spawn } from "node:child_process";
import { z } from "zod";
import { approvalPolicySchemaFor } from "./approval-policy.js";
import { type AnyToolDefinition, defineTool, ToolError } from "./define-tool.js";
import {
  type BwrapSandbox,
  bwrapArgs,
  bwrapSandboxSettingsSchema,
  probeBwrap,
  SANDBOX_PATH,
  type SandboxProbe,
  shellSandboxModeSchema,
} from "./sandbox.js";
import {
  flagSetting,
  textListSetting,
  textRecordSetting,
  textSetting,
  wholeNumberSetting,
} from "./setting-schemas.js";
import { ensureWorkspace } from "./workspace.js";

/**
 * Settings of the `shell` tool (`builtinTools.shell` in the config module); the sandbox settings apply
 * when `sandbox` is `"bwrap"`.
 */
export const shellSettingsSchema = bwrapSandboxSettingsSchema.extend({
  /**
   * `"bwrap"` (default): every command runs in a bubblewrap sandbox; when bubblewrap is missing or cannot
   * create namespaces, calls fail with a clear error instead of running unsandboxed. `"none"`: commands run
   * directly on the worker (they can read its files and processes) — only on the operator's explicit choice.
   */
  sandbox: shellSandboxModeSchema.optional(),
  /** Time limit of a command unless the model asks for another one. Default 60 000 ms. */
  timeoutMs: wholeNumberSetting("60000").optional(),
  /** The longest time limit the model may ask for. Default 600 000 ms. */
  maxTimeoutMs: wholeNumberSetting("600000").optional(),
  /** Output (stdout and stderr together) kept per command; beyond it, the head and tail are kept. Default 64 KiB. */
  maxOutputBytes: wholeNumberSetting("65536").optional(),
  /**
   * Worker environment variables passed through, by name. Commands otherwise get only an allowlist: PATH,
   * HOME and PWD (the workspace), TERM=dumb, LANG and LC_ALL. Default none.
   */
  passEnv: textListSetting('["HTTPS_PROXY"]').optional(),
  /** Variables set for every command. */
  env: textRecordSetting('{ CI: "1" }').optional(),
  /** The shell that runs the command with `-c`. Default `/bin/sh`. */
  shell: textSetting('"/bin/bash"').optional(),
  /** Time between SIGTERM and SIGKILL when a command is stopped. Default 2 000 ms. */
  killGraceMs: wholeNumberSetting("2000").optional(),
  /** Default `"ask"`: every command needs an approval. */
  approval: approvalPolicySchemaFor<{ command: string; timeoutSeconds?: number | undefined }>().optional(),
  /**
   * `true` lets a steer or interrupt that arrives while a command runs stop it (SIGTERM, then SIGKILL).
   * Default `false`: a command may have side effects, so only the operator can allow that.
   */
  interruptible: flagSetting().optional(),
});

/** See {@link shellSettingsSchema}. */
export type ShellOptions = z.infer<typeof shellSettingsSchema>;

/** How a command ended. */
export interface CommandResult {
  exitCode: number | null;
  /** The signal that ended it, if any. */
  signal: NodeJS.Signals | null;
  /** stdout and stderr interleaved, capped. */
  output: string;
  timedOut: boolean;
  aborted: boolean;
}

/** Options of {@link runShellCommand}. */
export interface RunCommandOptions {
  cwd: string;
  env: Record<string, string>;
  timeoutMs: number;
  maxOutputBytes: number;
  signal?: AbortSignal;
  shell?: string;
  killGraceMs?: number;
  /** Run the command inside this bubblewrap sandbox (see {@link bwrapArgs}). Default: directly. */
  sandbox?: BwrapSandbox;
}

/** Keeps the first and the last bytes of a stream that may be much larger than the cap. */
class OutputCap {
  private readonly head: Buffer[] = [];
  private headBytes = 0;
  private tail = Buffer.alloc(0);
  private total = 0;
  private readonly headCap: number;
  private readonly tailCap: number;

  constructor(cap: number) {
    this.tailCap = Math.floor(cap / 4);
    this.headCap = cap - this.tailCap;
  }

  push(chunk: Buffer): void {
    this.total += chunk.length;
    const room = this.headCap - this.headBytes;
    if (room > 0) {
      this.head.push(chunk.subarray(0, room));
      this.headBytes += Math.min(room, chunk.length);
      chunk = chunk.subarray(room);
    }
    if (chunk.length > 0) this.tail = Buffer.concat([this.tail, chunk]).subarray(-this.tailCap);
  }

  text(): string {
    const head = Buffer.concat(this.head).toString("utf8");
    const omitted = this.total - this.headBytes - this.tail.length;
    if (omitted <= 0) return head + this.tail.toString("utf8");
    return `${head}\n[… ${omitted} bytes of output omitted …]\n${this.tail.toString("utf8")}`;
  }
}

function killGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (pid === undefined) return;
  try {
    // A negative pid addresses the whole process group the command leads (it was spawned detached).
    process.kill(-pid, signal);
  } catch {
    // Already gone.
  }
}

/**
 * Runs `command` with `/bin/sh -c` in its own process group — inside `options.sandbox` when given, where
 * the sandbox's PID namespace ends every process of the command (even `setsid` ones) when its shell
 * exits. On timeout or abort the whole group gets SIGTERM, then SIGKILL after the grace period; when the
 * shell exits, processes it left running in the background are killed too. Never rejects for the
 * command's own failures (they are in the result); rejects when the shell (or bwrap) cannot be started.
 */
export function runShellCommand(command: string, options: RunCommandOptions): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    const output = new OutputCap(options.maxOutputBytes);
    const shellArgv = [options.shell ?? "/bin/sh", "-c", command];
    const [file, ...args] = options.sandbox
      ? [options.sandbox.bwrap, ...bwrapArgs(options.cwd, options.sandbox), ...shellArgv]
      : shellArgv;
    const child = spawn(file!, args, {
      cwd: options.cwd,
      env: options.env,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let timedOut = false;
    let aborted = false;
    let killTimer: NodeJS.Timeout | undefined;
    const stop = () => {
      killGroup(child.pid, "SIGTERM");
      killTimer ??= setTimeout(() => killGroup(child.pid, "SIGKILL"), options.killGraceMs ?? 2000);
    };
    const timer = setTimeout(() => {
      timedOut = true;
      stop();
    }, options.timeoutMs);
    const onAbort = () => {
      aborted = true;
      stop();
    };
    if (options.signal?.aborted) onAbort();
    else options.signal?.addEventListener("abort", onAbort, { once: true });
    child.stdout.on("data", (chunk: Buffer) => output.push(chunk));
    child.stderr.on("data", (chunk: Buffer) => output.push(chunk));
    // Background children keep the pipes open; the command is over when its shell is.
    child.on("exit", () => killGroup(child.pid, "SIGKILL"));
    child.on("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on("close", (exitCode, signal) => {
      clearTimeout(timer);
      clearTimeout(killTimer);
      options.signal?.removeEventListener("abort", onAbort);
      resolve({ exitCode, signal, output: output.text(), timedOut, aborted });
    });
  });
}

/**
 * The environment commands see, built from an allowlist: nothing from the worker (no API keys, no tokens)
 * unless `passEnv` names it. In the sandbox PATH is the standard system PATH.
 */
export function scrubbedEnv(
  workspace: string,
  options: ShellOptions,
  sandboxed = (options.sandbox ?? "bwrap") === "bwrap",
): Record<string, string> {
  const env: Record<string, string> = {
    PATH: sandboxed ? SANDBOX_PATH : (process.env.PATH ?? SANDBOX_PATH),
    HOME: workspace,
    PWD: workspace,
    TERM: "dumb",
    LANG: process.env.LANG ?? "C.UTF-8",
  };
  if (process.env.LC_ALL) env.LC_ALL = process.env.LC_ALL;
  for (const name of options.passEnv ?? []) {
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
  return { ...env, ...options.env };
}

/**
 * The sandbox one tool instance runs in, probed on first use. A working sandbox is remembered; a missing
 * one is probed again next time (the operator may have installed bubblewrap since).
 */
function sandboxResolver(options: ShellOptions): () => Promise<BwrapSandbox | undefined> {
  if (options.sandbox === "none") return async () => undefined;
  let ready: BwrapSandbox | undefined;
  return async () => {
    if (ready) return ready;
    const probe: SandboxProbe = await probeBwrap(options);
    if (!probe.available)
      throw new ToolError(
        `The shell is not available: ${probe.reason}. Commands only run sandboxed; the operator has to install bubblewrap (or explicitly allow an unsandboxed shell).`,
      );
    ready = probe.sandbox;
    return ready;
  };
}

/**
 * `shell`: runs a command in the thread's workspace, sandboxed with bubblewrap unless the options say
 * `sandbox: "none"`. Off by default; approval `"ask"` by default.
 */
export function shellTool(options: ShellOptions = {}): AnyToolDefinition {
  const timeoutMs = options.timeoutMs ?? 60_000;
  const maxTimeoutMs = Math.max(timeoutMs, options.maxTimeoutMs ?? 600_000);
  const sandboxed = (options.sandbox ?? "bwrap") === "bwrap";
  const resolveSandbox = sandboxResolver(options);
  const where = sandboxed
    ? "in a sandbox where only this thread's workspace directory is writable (it is the working directory and HOME; /tmp is private and emptied after each command)"
    : "in this thread's workspace directory";
  return defineTool({
    name: "shell",
    description: `Run a shell command (/bin/sh -c) ${where}. Output is capped; the command is killed after ${Math.round(timeoutMs / 1000)} s unless timeoutSeconds says otherwise (at most ${Math.round(maxTimeoutMs / 1000)} s). No network daemons: background processes are stopped when the command ends.`,
    parameters: z.object({
      command: z.string().min(1).describe("The command line to run"),
      timeoutSeconds: z.number().positive().optional().describe("Time limit in seconds"),
    }),
    approval: options.approval ?? "ask",
    executionMode: "sequential",
    interruptible: options.interruptible === true,
    async execute({ command, timeoutSeconds }, ctx) {
      const sandbox = await resolveSandbox();
      const cwd = await ensureWorkspace(ctx.workspaceDir);
      const limit = Math.min(maxTimeoutMs, timeoutSeconds ? timeoutSeconds * 1000 : timeoutMs);
      const result = await runShellCommand(command, {
        cwd,
        env: scrubbedEnv(cwd, options, sandboxed),
        ...(sandbox ? { sandbox } : {}),
        timeoutMs: limit,
        maxOutputBytes: options.maxOutputBytes ?? 64 * 1024,
        signal: ctx.signal,
        ...(options.shell ? { shell: options.shell } : {}),
        ...(options.killGraceMs !== undefined ? { killGraceMs: options.killGraceMs } : {}),
      });
      const output = result.output.trimEnd() || "(no output)";
      if (result.aborted) throw new ToolError(`The command was stopped with the run.\n${output}`);
      if (result.timedOut)
        throw new ToolError(
          `The command timed out after ${limit < 1000 ? `${limit} ms` : `${Math.round(limit / 1000)} s`} and was killed.\nOutput so far:\n${output}`,
        );
      const status = result.signal ? `killed by ${result.signal}` : `exit code ${result.exitCode}`;
      return { content: [{ type: "text", text: `${output}\n[${status}]` }], details: { ...result, output } };
    },
  });
}
