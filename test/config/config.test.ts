import { spawnSync } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ConfigError, loadConfig, parseEnv } from "../../src/config/index.js";
import { builtinTools } from "../../src/tools/index.js";
import { call, textOf } from "../tools/helpers.js";

const ROOT = resolve(import.meta.dirname, "../..");
const FIXTURES = resolve(import.meta.dirname, "../fixtures/config");
const SRC_CONFIG = `file://${ROOT}/src/config/index.ts`;

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "threadline-config-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Writes a config module into the temp dir and loads it as the start-up would. */
async function loadModule(name: string, source: string, env: NodeJS.ProcessEnv = {}) {
  await writeFile(join(dir, name), source);
  return loadConfig({ env, cwd: dir });
}

async function problemsOf(promise: Promise<unknown>): Promise<string[]> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  throw new Error("expected a ConfigError");
}

describe("environment", () => {
  it("names every invalid variable, what was expected and an example, without echoing values", () => {
    let error: ConfigError | undefined;
    try {
      parseEnv({
        OPENAI_API_KEY: "sk-secret-value-123",
        OPENAI_BASE_URL: "http//localhost:11434",
        WORKER_CONCURRENCY: "lots",
        OPENAI_CONTEXT_WINDOW: "12",
        LOG_LEVEL: "loud",
      });
    } catch (err) {
      error = err as ConfigError;
    }
    expect(error?.problems).toEqual([
      "OPENAI_BASE_URL must be a URL, for example http://localhost:11434/v1",
      "OPENAI_CONTEXT_WINDOW must be at least 1024 tokens, for example 128000",
      "WORKER_CONCURRENCY must be a whole number, for example 200",
      "LOG_LEVEL must be one of trace, debug, info, warn, error, fatal, silent, for example info",
    ]);
    expect(error?.message).toMatch(
      /^Threadline can't start, the configuration has 4 problems:\n {2}- OPENAI_BASE_URL/,
    );
    expect(error?.message).not.toContain("sk-secret-value-123");
    expect(error?.message).not.toContain("lots");
  });

  it("THREADLINE_MODEL_PROVIDER picks a built-in provider by name, openai by default (empty = unset)", async () => {
    expect(parseEnv({}).THREADLINE_MODEL_PROVIDER).toBe("openai");
    expect(parseEnv({ THREADLINE_MODEL_PROVIDER: " " }).THREADLINE_MODEL_PROVIDER).toBe("openai");
    expect(parseEnv({ THREADLINE_MODEL_PROVIDER: "openai" }).THREADLINE_MODEL_PROVIDER).toBe("openai");
    expect(
      await problemsOf(Promise.resolve().then(() => parseEnv({ THREADLINE_MODEL_PROVIDER: "antropic" }))),
    ).toEqual(["THREADLINE_MODEL_PROVIDER must be openai, for example openai"]);
  });

  it("the provider's variables keep their names and defaults (OPENAI_*)", () => {
    const env = parseEnv({ OPENAI_API_KEY: "sk-x", OPENAI_IDLE_TIMEOUT_MS: "0", OPENAI_THINK_TAGS: "text" });
    expect(env).toMatchObject({
      OPENAI_API_KEY: "sk-x",
      OPENAI_MODEL: "gpt-4o-mini",
      OPENAI_HEADER_TIMEOUT_MS: 120_000,
      OPENAI_IDLE_TIMEOUT_MS: 0,
      OPENAI_MAX_OUTPUT_CHARS: 200_000,
      OPENAI_THINK_TAGS: "text",
    });
    expect(env.OPENAI_BASE_URL).toBeUndefined();
    expect(env.OPENAI_CONTEXT_WINDOW).toBeUndefined();
  });
});

describe("config module", () => {
  it("loads the default file name from the working directory, with defineTool tools", async () => {
    const loaded = await loadConfig({ env: {}, cwd: FIXTURES });
    expect(loaded.configPath).toBe(join(FIXTURES, "threadline.config.ts"));
    expect(loaded.config.tools?.map((tool) => tool.name)).toEqual(["get_weather"]);
    expect(loaded.config.defaultDisposition).toBe("followUp");
    expect(loaded.env.OPENAI_MODEL).toBe("gpt-4o-mini");
  });

  it("THREADLINE_CONFIG picks another path; an .mjs module and an async default export work", async () => {
    await writeFile(
      join(dir, "bot.mjs"),
      'export default async () => ({ systemPrompt: "Be brief.", footer: false });',
    );
    const loaded = await loadConfig({ env: { THREADLINE_CONFIG: "bot.mjs" }, cwd: dir });
    expect(loaded.config).toEqual({ systemPrompt: "Be brief.", footer: false });
  });

  it("without a config module, everything has its default", async () => {
    const loaded = await loadConfig({ env: {}, cwd: dir });
    expect(loaded).toMatchObject({ config: {}, configPath: undefined });
  });

  it("lists every invalid value with what was expected and an example", async () => {
    const problems = await problemsOf(
      loadModule(
        "threadline.config.mjs",
        `export default {
          model: { contextWindow: -5, temperature: "warm" },
          mcpServers: { github: { args: ["-y", "server-github"] }, "bad name": { url: "x" }, docs: { url: "ftp://x" } },
          defaultDisposition: "later",
          builtinTools: { shell: "yes" },
          tools: [{ name: "not_made_with_defineTool" }],
          approvals: { shell: "maybe" },
          budgets: { maxTurns: 2.5 },
        };`,
      ),
    );
    expect(problems).toEqual([
      "threadline.config.mjs: model.contextWindow must be greater than 0, for example 128000",
      "threadline.config.mjs: model.temperature must be a number, for example 0.2",
      "threadline.config.mjs: tools.0 must be a tool made with defineTool({ name, description, parameters, execute })",
      "threadline.config.mjs: builtinTools.shell must be true, false or an object of settings",
      'threadline.config.mjs: mcpServers.github needs either command (a server started over stdio, e.g. command: "npx") or url (streamable HTTP, e.g. url: "https://mcp.example.com/mcp"), not both',
      'threadline.config.mjs: mcpServers.bad name is not a valid server name: use 1–30 letters, digits, "_" or "-", for example github',
      "threadline.config.mjs: mcpServers.docs.url must be an http(s) URL, for example https://mcp.example.com/mcp",
      'threadline.config.mjs: approvals.shell must be "never", "ask" or a function (args, ctx) => "never" | "ask"',
      'threadline.config.mjs: defaultDisposition must be one of "steer", "followUp"',
      "threadline.config.mjs: budgets.maxTurns must be a whole number, for example 50",
    ]);
  });

  it("names unknown settings and suggests the one that was probably meant", async () => {
    const problems = await problemsOf(
      loadModule(
        "threadline.config.mjs",
        "export default { tool: [], model: { temprature: 1 }, mcpServers: { x: { command: 'a', argz: [] } } };",
      ),
    );
    expect(problems).toEqual([
      'threadline.config.mjs: model.temprature is not a setting Threadline knows (did you mean "temperature"?)',
      'threadline.config.mjs: mcpServers.x.argz is not a setting Threadline knows (did you mean "args"?)',
      'threadline.config.mjs: tool is not a setting Threadline knows (did you mean "tools"?)',
    ]);
  });

  it("reports a broken module in one line: syntax error, missing export, a throw while loading", async () => {
    // Distinct files: a process imports a module once.
    const load = (name: string, source: string) => loadModule(name, source, { THREADLINE_CONFIG: name });
    expect(await problemsOf(load("syntax.mjs", "export default { systemPrompt: 'x', }}"))).toEqual([
      expect.stringMatching(/^syntax\.mjs has a syntax error: \S/),
    ]);
    expect(await problemsOf(load("no-default.mjs", "export const prompt = 'x';"))).toEqual([
      "no-default.mjs has no default export; end it with export default defineConfig({ … })",
    ]);
    expect(
      await problemsOf(load("throws.mjs", "throw new Error('TOKEN missing\\n    at somewhere (x.js:1:1)');")),
    ).toEqual(["throws.mjs failed while loading: TOKEN missing"]);
    expect(await problemsOf(load("array.mjs", "export default [1, 2];"))).toEqual([
      "array.mjs: the default export must be an object, for example export default defineConfig({ … })",
    ]);
  });

  it("reports a tool defined wrongly in the module", async () => {
    const problems = await problemsOf(
      loadModule(
        "threadline.config.mjs",
        `import { defineTool } from "${SRC_CONFIG}";
         export default { tools: [defineTool({ name: "two words", description: "x", parameters: {}, execute() {} })] };`,
      ),
    );
    expect(problems).toEqual([
      expect.stringMatching(
        /^threadline\.config\.mjs: Tool "two words" is not valid: name must be .*; parameters must be a zod object/,
      ),
    ]);
  });

  it("a built-in tool setting written as undefined keeps the tool's default instead of lifting the limit", async () => {
    // A config module may compute a setting that ends up undefined (`process.env.X && Number(process.env.X)`).
    const loaded = await loadModule(
      "threadline.config.mjs",
      "export default { builtinTools: { files: { maxReadBytes: undefined, maxOutputChars: undefined } } };",
    );
    const workspace = join(dir, "workspace");
    await mkdir(workspace);
    await writeFile(join(workspace, "big.txt"), "x".repeat(1024 * 1024 + 1));
    await writeFile(join(workspace, "wide.txt"), "y".repeat(60_000));
    const readFile = builtinTools(loaded.config.builtinTools).find((tool) => tool.name === "read_file")!;
    await expect(call(readFile, { path: "big.txt" }, { workspaceDir: workspace })).rejects.toThrow(
      '"big.txt" is 1048577 bytes, more than the 1048576 bytes allowed.',
    );
    expect(textOf(await call(readFile, { path: "wide.txt" }, { workspaceDir: workspace }))).toHaveLength(
      50_000,
    );
  });

  it("fails once with the environment's and the module's problems together", async () => {
    await writeFile(join(dir, "threadline.config.mjs"), "export default { queueCap: 0 };");
    const problems = await problemsOf(
      loadConfig({ env: { REDIS_URL: "nope", OPENAI_API_KEY: "sk-live-abc" }, cwd: dir }),
    );
    expect(problems).toEqual([
      "REDIS_URL must be a URL, for example redis://127.0.0.1:6379",
      "threadline.config.mjs: queueCap must be greater than 0, for example 20",
    ]);
    expect(await problemsOf(loadConfig({ env: { THREADLINE_CONFIG: "missing.ts" }, cwd: dir }))).toEqual([
      `THREADLINE_CONFIG points to ${join(dir, "missing.ts")}, which does not exist (expected a config module such as ./threadline.config.ts)`,
    ]);
  });

  it("the CLI prints one message listing every problem, never a stack trace or a secret, and exits with 2", async () => {
    await writeFile(
      join(dir, "threadline.config.mjs"),
      "export default { steeringMode: 'some', mcpServers: { x: {} } };",
    );
    const result = spawnSync(
      process.execPath,
      [join(ROOT, "node_modules/tsx/dist/cli.mjs"), join(ROOT, "src/app/cli.ts"), "worker"],
      {
        cwd: dir,
        env: {
          PATH: process.env.PATH ?? "",
          OPENAI_API_KEY: "sk-live-do-not-print",
          WORKER_CONCURRENCY: "0",
        },
        encoding: "utf8",
        timeout: 60_000,
      },
    );
    expect(result.status).toBe(2);
    expect(result.stderr.trim().split("\n")).toEqual([
      "Threadline can't start, the configuration has 3 problems:",
      "  - WORKER_CONCURRENCY must be greater than 0, for example 200",
      '  - threadline.config.mjs: mcpServers.x needs either command (a server started over stdio, e.g. command: "npx") or url (streamable HTTP, e.g. url: "https://mcp.example.com/mcp"), not both',
      '  - threadline.config.mjs: steeringMode must be one of "one-at-a-time", "all"',
    ]);
    expect(result.stdout + result.stderr).not.toContain("sk-live-do-not-print");
  }, 60_000);
});
