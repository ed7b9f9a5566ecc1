import { readdir, readFile } from "node:fs/promises";
import { join, relative, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Model } from "../../src/agent/index.js";
import { envSchema } from "../../src/config/index.js";
import {
  builtinPrices,
  defaultProviders,
  failedStreamFn,
  MODEL_PROVIDERS,
  type ModelProvider,
  OPENAI_COMPLETIONS_API,
  openAIModel,
  openAIProvider,
  ProviderRegistry,
  providerFor,
  providerModule,
  UnknownProviderError,
} from "../../src/llm/index.js";
import { BUILTIN_PRICES } from "../../src/runs/index.js";
import { FakeOpenAIServer, textReply } from "../fakes/openai-server.js";
import { ScriptedModel, TEST_MODEL } from "../fakes/scripted-model.js";
import { drain, user } from "./helpers.js";

/** A provider that answers every request with `text` (and remembers the settings it was built with). */
function scriptedProvider(text: string): ModelProvider & { built: unknown[] } {
  const built: unknown[] = [];
  return {
    built,
    streamFn(options) {
      built.push(options);
      const model = new ScriptedModel([]);
      model.fallback = () => ({ text });
      return model.streamFn;
    },
  };
}

async function answer(provider: ModelProvider, model: Model): Promise<string> {
  const stream = await provider.streamFn({ apiKey: "k" })(
    model,
    { systemPrompt: "", messages: [user("hi")] },
    {},
  );
  const { message } = await drain(stream);
  return message.content.map((block) => (block.type === "text" ? block.text : "")).join("");
}

describe("ProviderRegistry", () => {
  it("picks the provider registered under the model's api", async () => {
    const registry = new ProviderRegistry()
      .register("alpha", scriptedProvider("from alpha"))
      .register("beta", scriptedProvider("from beta"));

    const beta = registry.for({ ...TEST_MODEL, api: "beta" });
    const alpha = registry.for({ ...TEST_MODEL, api: "alpha" });

    expect(await answer(beta, { ...TEST_MODEL, api: "beta" })).toBe("from beta");
    expect(await answer(alpha, { ...TEST_MODEL, api: "alpha" })).toBe("from alpha");
    expect(registry.apis()).toEqual(["alpha", "beta"]);
  });

  it("a later registration for the same api replaces the earlier one", async () => {
    const registry = new ProviderRegistry()
      .register("alpha", scriptedProvider("old"))
      .register("alpha", scriptedProvider("new"));
    expect(await answer(registry.for({ ...TEST_MODEL, api: "alpha" }), TEST_MODEL)).toBe("new");
  });

  it("an unknown api is a clear configuration error naming the api, the model and what is registered", () => {
    const registry = new ProviderRegistry().register("alpha", scriptedProvider("a"));
    let thrown: unknown;
    try {
      registry.for({ api: "anthropic-messages", id: "claude-x" });
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(UnknownProviderError);
    expect((thrown as Error).message).toBe(
      'No model provider handles api "anthropic-messages" (model "claude-x"); registered: "alpha".',
    );
    expect(thrown).toMatchObject({ api: "anthropic-messages", model: "claude-x", known: ["alpha"] });
    expect(() => new ProviderRegistry().for({ api: "x", id: "m" })).toThrow(/registered: none\./);
  });

  it("refuses an empty api name", () => {
    expect(() => new ProviderRegistry().register(" ", scriptedProvider("a"))).toThrow(/non-empty api/);
  });
});

describe("the default registry", () => {
  let server: FakeOpenAIServer;
  beforeAll(async () => {
    server = await FakeOpenAIServer.start();
  });
  afterAll(async () => {
    await server.close();
  });

  it("has the OpenAI-compatible provider for openAIModel's api, streaming through the openai SDK", async () => {
    const model = openAIModel({ id: "fake-model", baseUrl: server.baseURL });
    expect(model.api).toBe(OPENAI_COMPLETIONS_API);
    expect(defaultProviders.apis()).toContain(OPENAI_COMPLETIONS_API);
    const provider = providerFor(model);
    expect(provider).toBe(openAIProvider);

    server.enqueue(textReply("hello from the fake server"));
    expect(await answer(provider, model)).toBe("hello from the fake server");
    expect(server.requests.at(-1)?.path).toBe("/chat/completions");
  });

  it("the OpenAI provider words its SDK's errors and probes endpoints", async () => {
    const model = openAIModel({ id: "fake-model", baseUrl: server.baseURL });
    const provider = providerFor(model);
    server.enqueue({ kind: "error", status: 401 });
    const stream = await provider.streamFn({ apiKey: "sk-wrong", maxRetries: 0 })(
      model,
      { systemPrompt: "", messages: [user("hi")] },
      {},
    );
    const { message } = await drain(stream);
    expect(message.errorMessage).toBe("The model provider rejected the API key (401). Check OPENAI_API_KEY.");

    const probe = await provider.probe?.({ baseURL: server.baseURL, model: "fake-model" });
    expect(probe?.ok).toBe(true);
    expect(
      provider.describeError?.(new Error("boom"), {
        baseURL: server.baseURL,
        model: "m",
        streamStarted: false,
      }),
    ).toEqual({ kind: "unknown", message: "The model request failed: boom" });
  });

  it("failedStreamFn ends every request with the given sentence, for any provider", async () => {
    const { message, types } = await drain(
      await failedStreamFn("No model is configured.")(TEST_MODEL, { systemPrompt: "", messages: [] }, {}),
    );
    expect(types).toEqual(["error"]);
    expect(message).toMatchObject({
      stopReason: "error",
      errorMessage: "No model is configured.",
      api: "scripted",
    });
  });
});

const SRC = resolve(import.meta.dirname, "../../src");

async function sourceFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries
    .filter((entry) => entry.isFile() && entry.name.endsWith(".ts"))
    .map((entry) => join(entry.parentPath, entry.name));
}

/** Files under `dir` (relative to src/) whose source matches `pattern`. */
async function filesMatching(dir: string, pattern: RegExp): Promise<string[]> {
  const found: string[] = [];
  for (const file of await sourceFiles(join(SRC, dir))) {
    if (pattern.test(await readFile(file, "utf8"))) found.push(relative(SRC, file));
  }
  return found.sort();
}

describe("the provider seam", () => {
  it("only the OpenAI provider's folder imports the openai SDK", async () => {
    const importers = await filesMatching(".", /from "openai(\/[^"]*)?"/);
    expect(importers.length).toBeGreaterThan(0);
    expect(importers.filter((file) => !file.startsWith("llm/openai/"))).toEqual([]);
  });

  it("src/app reaches providers through the registry, not the OpenAI provider's functions", async () => {
    const provider = new Set([
      "createOpenAIStreamFn",
      "probeModelEndpoint",
      "serverContextWindow",
      "ChatChunkAccumulator",
      "describeOpenAIFailure",
      "openAIProvider",
      "openAIModel",
      "DEFAULT_OPENAI_BASE_URL",
      "OPENAI_COMPLETIONS_API",
    ]);
    const direct: string[] = [];
    for (const file of await sourceFiles(join(SRC, "app"))) {
      const text = await readFile(file, "utf8");
      for (const match of text.matchAll(/import\s*(?:type\s*)?\{([^}]*)\}\s*from\s*"[./]*llm\/index\.js"/g)) {
        for (const name of (match[1] ?? "").split(",")) {
          const imported = name.replace(/\btype\b/, "").trim();
          if (provider.has(imported)) direct.push(`${relative(SRC, file)}: ${imported}`);
        }
      }
    }
    expect(direct).toEqual([]);
  });

  it("src/app, src/config and src/runs read the provider table: no provider's variable in their code", async () => {
    // Comments may name the default provider's variables as examples; code reads them through the module.
    const code = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|\s)\/\/.*$/gm, "$1");
    const named: string[] = [];
    for (const dir of ["app", "config", "runs"])
      for (const file of await sourceFiles(join(SRC, dir)))
        for (const match of code(await readFile(file, "utf8")).matchAll(/\b(OPENAI|ANTHROPIC)_[A-Z_]+/g))
          named.push(`${relative(SRC, file)}: ${match[0]}`);
    expect(named).toEqual([]);
  });
});

describe("the provider table", () => {
  it("each entry is registered under its api, named once, with its variables in the environment schema", () => {
    const names = MODEL_PROVIDERS.map((provider) => provider.name);
    expect(new Set(names).size).toBe(names.length);
    expect(names[0]).toBe("openai");
    const declared: string[] = [];
    for (const provider of MODEL_PROVIDERS) {
      expect(provider.name).toMatch(/^[a-z0-9-]+$/);
      expect(defaultProviders.for({ api: provider.api, id: "m" })).toBe(provider);
      expect(providerModule(provider.name)).toBe(provider);
      expect(provider.model({ id: "m" }).api).toBe(provider.api);
      const own = Object.keys(provider.env);
      declared.push(...own);
      for (const name of Object.values(provider.variables)) expect(own).toContain(name);
      for (const name of own) expect(Object.keys(envSchema.shape)).toContain(name);
      for (const [id, price] of Object.entries(provider.prices ?? {}))
        expect(BUILTIN_PRICES[id]).toEqual(price);
    }
    expect(new Set(declared).size).toBe(declared.length);
    expect(BUILTIN_PRICES).toEqual(builtinPrices());
    expect(() => providerModule("nope")).toThrow('No model provider is named "nope"; built in: openai');
  });

  it("the OpenAI-compatible module reads OPENAI_* in shared terms", () => {
    const env = envSchema.parse({
      OPENAI_API_KEY: "sk-1",
      OPENAI_BASE_URL: "http://127.0.0.1:9/v1",
      OPENAI_MODEL: "qwen3:8b",
      OPENAI_CONTEXT_WINDOW: "8192",
    });
    expect(openAIProvider.fromEnv(env)).toEqual({
      model: "qwen3:8b",
      apiKey: "sk-1",
      baseURL: "http://127.0.0.1:9/v1",
      contextWindow: 8192,
      headerTimeoutMs: 120_000,
      idleTimeoutMs: 120_000,
      maxOutputChars: 200_000,
      thinkTags: "thinking",
    });
    expect(openAIProvider.fromEnv(envSchema.parse({}))).toEqual({
      model: "gpt-4o-mini",
      headerTimeoutMs: 120_000,
      idleTimeoutMs: 120_000,
      maxOutputChars: 200_000,
      thinkTags: "thinking",
    });
  });
});
