import type { Env, ThreadlineConfig } from "../config/index.js";
import type { RunLogger } from "../runs/index.js";
import { probeBwrap } from "../tools/index.js";

/** The `shell` tool's settings as the config module holds them. */
type ShellSettings = Exclude<NonNullable<ThreadlineConfig["builtinTools"]>["shell"], boolean | undefined>;

/** How the worker offers the `shell` tool after {@link checkShellSandbox}. */
export type ShellReadiness =
  | { kind: "off" }
  | { kind: "sandboxed"; bwrap: string }
  | { kind: "unsandboxed" }
  | { kind: "refused"; reason: string };

/**
 * Decides at start-up whether the configured `shell` tool may be offered, and says so in the log. With
 * the default `sandbox: "bwrap"` it probes bubblewrap; when the sandbox cannot run, the shell is left out
 * (an error line says why and what to do) rather than run unsandboxed. `sandbox: "none"` (config module,
 * or `THREADLINE_SHELL_SANDBOX=none`) is the operator's explicit opt-in, logged as a warning.
 * Returns the config to build the agent from (its `builtinTools.shell` settled). Never rejects.
 */
export async function checkShellSandbox(
  env: Env,
  config: ThreadlineConfig,
  log: RunLogger,
): Promise<{ config: ThreadlineConfig; shell: ShellReadiness }> {
  const setting = config.builtinTools?.shell;
  if (setting === undefined || setting === false) return { config, shell: { kind: "off" } };
  const options: ShellSettings = setting === true ? {} : { ...setting };
  options.sandbox ??= env.THREADLINE_SHELL_SANDBOX ?? "bwrap";
  if (options.bwrapPath === undefined && env.THREADLINE_BWRAP_PATH)
    options.bwrapPath = env.THREADLINE_BWRAP_PATH;
  const withShell = (shell: ShellSettings | false): ThreadlineConfig => ({
    ...config,
    builtinTools: { ...config.builtinTools, shell },
  });
  if (options.sandbox === "none") {
    log.warn(
      { sandbox: "none" },
      "shell: commands run UNSANDBOXED on this worker (sandbox: none was chosen); they can read the worker's files and the environment of its processes, API keys and bot tokens included",
    );
    return { config: withShell(options), shell: { kind: "unsandboxed" } };
  }
  const probe = await probeBwrap(options);
  if (!probe.available) {
    log.error(
      { reason: probe.reason },
      `shell: the shell tool is turned off because no sandbox is available: ${probe.reason}. Install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap), or set THREADLINE_SHELL_SANDBOX=none to allow an unsandboxed shell that can read the worker's secrets.`,
    );
    return { config: withShell(false), shell: { kind: "refused", reason: probe.reason } };
  }
  log.info({ bwrap: probe.sandbox.bwrap }, "shell: commands run in a bubblewrap sandbox");
  return {
    config: withShell({ ...options, bwrapPath: probe.sandbox.bwrap }),
    shell: { kind: "sandboxed", bwrap: probe.sandbox.bwrap },
  };
}
