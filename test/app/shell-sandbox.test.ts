import { describe, expect, it } from "vitest";
import { checkShellSandbox } from "../../src/app/shell-sandbox.js";
import { type Env, parseEnv, type ThreadlineConfig } from "../../src/config/index.js";
import { builtinTools } from "../../src/tools/index.js";

/** A logger that keeps what the worker would print, as `level: message`. */
function recordingLog() {
  const lines: string[] = [];
  const at = (level: string) => (_fields: Record<string, unknown>, message: string) => {
    lines.push(`${level}: ${message}`);
  };
  return { lines, log: { info: at("info"), warn: at("warn"), error: at("error") } };
}

const envWith = (vars: Record<string, string>): Env => parseEnv(vars);
const shellOf = (config: ThreadlineConfig) =>
  builtinTools(config.builtinTools).find((tool) => tool.name === "shell");

describe("the shell sandbox at worker start-up", () => {
  it("offers the shell sandboxed when bubblewrap works", async () => {
    const { lines, log } = recordingLog();
    const checked = await checkShellSandbox(envWith({}), { builtinTools: { shell: true } }, log);
    expect(checked.shell).toMatchObject({ kind: "sandboxed", bwrap: expect.stringMatching(/bwrap$/) });
    expect(shellOf(checked.config)).toBeDefined();
    expect(lines).toEqual(["info: shell: commands run in a bubblewrap sandbox"]);
  });

  it("refuses to enable the shell when bubblewrap is missing, and says so and what to do", async () => {
    const { lines, log } = recordingLog();
    const checked = await checkShellSandbox(
      envWith({ THREADLINE_BWRAP_PATH: "/nonexistent/bwrap" }),
      { builtinTools: { shell: { timeoutMs: 5000 } } },
      log,
    );
    expect(checked.shell).toEqual({
      kind: "refused",
      reason: 'bubblewrap ("/nonexistent/bwrap") was not found',
    });
    expect(shellOf(checked.config)).toBeUndefined();
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^error: shell: the shell tool is turned off because no sandbox is available: bubblewrap \("\/nonexistent\/bwrap"\) was not found\. Install bubblewrap .* set THREADLINE_SHELL_SANDBOX=none/,
    );
  });

  it("runs an unsandboxed shell only on the operator's explicit choice, with a warning", async () => {
    const { lines, log } = recordingLog();
    const checked = await checkShellSandbox(
      envWith({ THREADLINE_SHELL_SANDBOX: "none", THREADLINE_BWRAP_PATH: "/nonexistent/bwrap" }),
      { builtinTools: { shell: true } },
      log,
    );
    expect(checked.shell).toEqual({ kind: "unsandboxed" });
    expect(shellOf(checked.config)).toBeDefined();
    expect(lines[0]).toMatch(/^warn: shell: commands run UNSANDBOXED/);
  });

  it("leaves a config without the shell alone", async () => {
    const { lines, log } = recordingLog();
    const config: ThreadlineConfig = { builtinTools: { fetchUrl: false } };
    expect(await checkShellSandbox(envWith({}), config, log)).toEqual({ config, shell: { kind: "off" } });
    expect(lines).toEqual([]);
  });

  it("rejects a misspelt THREADLINE_SHELL_SANDBOX", () => {
    expect(() => envWith({ THREADLINE_SHELL_SANDBOX: "off" })).toThrow(
      /THREADLINE_SHELL_SANDBOX.*bwrap or none/s,
    );
  });
});
