import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import * as agentSurface from "../src/agent/index.js";
import * as llmSurface from "../src/llm/index.js";

const SRC = resolve(import.meta.dirname, "../src");

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return path.endsWith(".ts") ? [path] : [];
  });
}

/** Every module specifier a file imports or re-exports (static and dynamic). */
function importsOf(file: string): string[] {
  const text = readFileSync(file, "utf8");
  const found: string[] = [];
  const patterns = [
    /\b(?:import|export)\s[^'"`;]*?\sfrom\s*["']([^"']+)["']/g,
    /\bimport\s*["']([^"']+)["']/g,
    /\bimport\(\s*["']([^"']+)["']\s*\)/g,
  ];
  for (const pattern of patterns) for (const match of text.matchAll(pattern)) found.push(match[1]!);
  return found;
}

/** The top-level src folder an import resolves to, or the package name for bare specifiers. */
function target(
  file: string,
  specifier: string,
): { kind: "module"; folder: string } | { kind: "package"; name: string } {
  if (specifier.startsWith(".")) {
    const folder = relative(SRC, resolve(file, "..", specifier)).split("/")[0]!;
    return { kind: "module", folder };
  }
  const parts = specifier.split("/");
  const name = specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0]!;
  return { kind: "package", name };
}

/** Which src folders each core folder may import (besides itself). */
const ALLOWED_FOLDERS: Record<string, string[]> = {
  agent: [],
  http: [],
  llm: ["agent", "http"],
  context: ["agent", "llm"],
  tools: ["agent"],
  chat: ["agent"],
  config: ["agent", "llm", "tools", "chat"],
  runs: ["agent", "llm", "tools", "chat", "config"],
};

/** Every other folder is a chat adapter (`slack`, `discord`, `playground`, a new one): the port and the agent only. */
const ADAPTER_IMPORTS = ["agent", "chat"];

/** The composition root, which may import every folder. */
const ROOT_FOLDER = "app";

/** The folders `folder` may import besides itself. */
function allowedImports(folder: string, folders: readonly string[]): readonly string[] {
  if (folder === ROOT_FOLDER) return folders;
  return ALLOWED_FOLDERS[folder] ?? ADAPTER_IMPORTS;
}

const files = sourceFiles(SRC);
const folders = [...new Set(files.map((file) => relative(SRC, file).split("/")[0]!))];

describe("architecture", () => {
  it("finds the source files", () => {
    expect(files.some((file) => file.includes("/agent/"))).toBe(true);
  });

  it("src/agent imports nothing but zod and its own files", () => {
    const offending: string[] = [];
    for (const file of files.filter((f) => relative(SRC, f).startsWith("agent/"))) {
      for (const specifier of importsOf(file)) {
        const t = target(file, specifier);
        const ok = t.kind === "package" ? t.name === "zod" : t.folder === "agent";
        if (!ok) offending.push(`${relative(SRC, file)} → ${specifier}`);
      }
    }
    expect(offending).toEqual([]);
  });

  it("only src/app/tracing.ts loads the OpenTelemetry SDK, and only dynamically; the rest uses @opentelemetry/api", () => {
    const offending: string[] = [];
    for (const file of files) {
      const text = readFileSync(file, "utf8");
      for (const specifier of importsOf(file)) {
        if (!specifier.startsWith("@opentelemetry/") || specifier === "@opentelemetry/api") continue;
        // A type-only import is erased at build time: it loads nothing.
        const staticLoad = text
          .split("\n")
          .some((line) => line.includes(`from "${specifier}"`) && !/^\s*import type\b/.test(line));
        const dynamic = text.includes(`import("${specifier}")`) && !staticLoad;
        if (relative(SRC, file) !== "app/tracing.ts" || !dynamic)
          offending.push(`${relative(SRC, file)} → ${specifier}`);
      }
    }
    expect(offending).toEqual([]);
  });

  it("folders depend only in the documented direction", () => {
    const offending: string[] = [];
    for (const file of files) {
      const folder = relative(SRC, file).split("/")[0]!;
      const allowed = allowedImports(folder, folders);
      for (const specifier of importsOf(file)) {
        const t = target(file, specifier);
        if (t.kind === "module" && t.folder !== folder && !allowed.includes(t.folder)) {
          offending.push(`${relative(SRC, file)} → ${specifier}`);
        }
      }
    }
    expect(offending).toEqual([]);
  });

  it("a folder the table does not list is an adapter: agent and chat only, never runs, config or another adapter", () => {
    const adapters = folders.filter((folder) => folder !== ROOT_FOLDER && !(folder in ALLOWED_FOLDERS));
    expect(adapters).toEqual(expect.arrayContaining(["slack", "discord", "playground"]));
    // A new platform's folder needs no edit here, and gets the same rule.
    expect(allowedImports("matrix", folders)).toEqual(["agent", "chat"]);
    for (const adapter of adapters) expect(allowedImports(adapter, folders)).toEqual(["agent", "chat"]);
    expect(allowedImports("app", folders)).toEqual(expect.arrayContaining([...adapters, "runs", "config"]));
  });

  it("other folders import a folder only through its index.ts", () => {
    const offending: string[] = [];
    for (const file of files) {
      const folder = relative(SRC, file).split("/")[0]!;
      for (const specifier of importsOf(file)) {
        if (!specifier.startsWith(".")) continue;
        const path = relative(SRC, resolve(file, "..", specifier));
        const [targetFolder, ...rest] = path.split("/");
        if (targetFolder !== folder && rest.join("/") !== "index.js")
          offending.push(`${relative(SRC, file)} → ${specifier}`);
      }
    }
    expect(offending).toEqual([]);
  });

  it("no folder's index.ts re-exports the Redis scripts (the Lua stays inside src/runs)", () => {
    const offending = files
      .filter((file) => file.endsWith("/index.ts"))
      .flatMap((file) =>
        importsOf(file)
          .filter((specifier) => /(^|\/)(thread-)?scripts\.js$/.test(specifier))
          .map((specifier) => `${relative(SRC, file)} → ${specifier}`),
      );
    expect(offending).toEqual([]);
  });

  it("the package surfaces (threadline/agent, threadline/llm) leave the loop's and the wire's internals out", () => {
    const internals: [string, Record<string, unknown>, string[]][] = [
      [
        "agent",
        agentSurface,
        [
          "prepareToolCall",
          "executePreparedToolCall",
          "finalizeExecutedToolCall",
          "abortToolCalls",
          "linkSignals",
          "noticeOf",
          "IncrementalConverter",
          "setDefaultStreamFn",
        ],
      ],
      [
        "llm",
        llmSurface,
        ["SseParser", "parseStreamingJson", "ThinkTagSplitter", "ChatChunkAccumulator", "buildChatRequest"],
      ],
    ];
    const exported = internals.flatMap(([folder, surface, names]) =>
      names.filter((name) => name in surface).map((name) => `${folder}: ${name}`),
    );
    expect(exported).toEqual([]);
  });

  it("src/chat names no platform and writes no platform syntax: adapters bring their ChatDialect", () => {
    // Code only: comments may say which platform does what.
    const code = (file: string) =>
      readFileSync(file, "utf8")
        .replace(/\/\*[\s\S]*?\*\//g, "")
        .replace(/(^|\s)\/\/.*$/gm, "$1");
    const platformSyntax = /["'`](?:slack|discord|playground)["'`]|<@|<!date|<t:/i;
    const offenders = files
      .filter((file) => relative(SRC, file).startsWith("chat/"))
      .flatMap((file) =>
        code(file)
          .split("\n")
          .filter((line) => platformSyntax.test(line))
          .map((line) => `${relative(SRC, file)}: ${line.trim()}`),
      );
    expect(offenders).toEqual([]);
    // The check itself catches a Slack switch.
    expect(platformSyntax.test('if (dialect === "slack") return "<@" + id;')).toBe(true);
  });

  it("the import scanner sees every kind of import", () => {
    const sample = join(SRC, "agent", "loop.ts");
    expect(importsOf(sample)).toContain("./tool-calls.js");
  });
});

describe("tests reach the suites' Redis, one server or a cluster", () => {
  const TEST = resolve(import.meta.dirname);

  it("child processes get their Redis from redisEnv(), never a bare REDIS_URL", () => {
    // `npm run test:cluster` runs these suites against a Redis Cluster: a child handed REDIS_URL would talk to
    // one server beside it (or refuse REDIS_URL and REDIS_CLUSTER_NODES together). Suites with a private
    // Redis of their own pass `REDIS_URL: <its url>` explicitly, which this allows; doctor's checks of one
    // server stay on one server.
    const shorthand = /(?:^|[{,]\s*)REDIS_URL\s*[,}]/m;
    const singleServerOnly = [join("support", "redis.ts"), join("app", "doctor.test.ts")];
    const offenders = sourceFiles(TEST)
      .filter((file) => !singleServerOnly.some((allowed) => file.endsWith(allowed)))
      .filter((file) => shorthand.test(readFileSync(file, "utf8")))
      .map((file) => relative(TEST, file));
    expect(offenders).toEqual([]);
  });
});
