import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { type ReplacedTool, TOOL_PRECEDENCE, toolDefinitions } from "../../src/app/agent-config.js";
import { loadToolsModule } from "../../src/app/tools-module.js";
import { defineTool, type ToolRunScope } from "../../src/tools/index.js";

const FIXTURES = resolve(import.meta.dirname, "../fixtures/tools-module");
const fixture = (name: string) => resolve(FIXTURES, name);

const scope = (requesterId: string): ToolRunScope => ({
  thread: { platform: "slack", workspace: "T1", channel: "C1", thread: "1.2" },
  threadId: "slack:T1:C1:1.2",
  runId: "r1",
  requester: { id: requesterId, name: requesterId },
  workspaceDir: "/tmp/threadline-tools-module-test",
});

const textOf = (result: { content: { type: string; text?: string }[] }) =>
  result.content.map((block) => block.text ?? "").join("");

describe("THREADLINE_TOOLS_MODULE", () => {
  it("a malformed tool stops start-up with an error naming the module, the tool and each problem", async () => {
    const error = await loadToolsModule(fixture("malformed.mjs")).catch((err: Error) => err);
    expect(error).toBeInstanceOf(Error);
    const message = (error as Error).message;
    expect(message).toContain(`THREADLINE_TOOLS_MODULE "${fixture("malformed.mjs")}"`);
    expect(message).toContain('tool "deploy" (tools[1])');
    expect(message).toContain("description must be a sentence");
    expect(message).toContain('approval must be "never", "ask" or a function');
    expect(message).toContain("execute must be a function");
    // The valid tool is not blamed.
    expect(message).not.toContain('"lookup"');
  });

  it("an entry that is no tool at all is named by its position", async () => {
    await expect(loadToolsModule(fixture("not-a-tool.mjs"))).rejects.toThrow(
      /tool "tools\[0\]" \(tools\[0\]\): must be a tool made with defineTool/,
    );
  });

  it("two tools of one name are refused", async () => {
    await expect(loadToolsModule(fixture("duplicate.mjs"))).rejects.toThrow(
      'more than one tool is named "lookup"',
    );
  });

  it("plain agent tools and defineTool definitions both load; a policy function sees the run's requester", async () => {
    const tools = await loadToolsModule(fixture("mixed.mjs"));
    expect(tools.map((tool) => tool.name)).toEqual(["deploy", "search"]);
    const deploy = tools[0]!;
    const asAlice = deploy.forRun(scope("U_ALICE"));
    const asAdmin = deploy.forRun(scope("U_ADMIN"));
    expect(typeof asAlice.approval).toBe("function");
    const decide = async (tool: typeof asAlice, service: string) =>
      typeof tool.approval === "function" ? tool.approval({ service }) : tool.approval;
    expect(await decide(asAlice, "prod")).toBe("ask");
    expect(await decide(asAdmin, "prod")).toBe("never");
    expect(await decide(asAlice, "staging")).toBe("never");
    expect(textOf(await asAlice.execute("c1", { service: "staging" }))).toBe("deployed staging");
  });
});

describe("tool precedence", () => {
  const configSearch = defineTool({
    name: "search",
    description: "Searches the config module's index.",
    parameters: z.object({ query: z.string() }),
    execute: ({ query }) => `config search: ${query}`,
  });
  const fetchUrl = defineTool({
    name: "fetch_url",
    description: "The tools module's own fetch.",
    parameters: z.object({ url: z.string() }),
    execute: ({ url }) => `module fetch: ${url}`,
  });

  it("weakest first: built-in, MCP server, tools module, config module", () => {
    expect(TOOL_PRECEDENCE).toEqual(["built-in", "MCP server", "tools module", "config module"]);
  });

  it("the config module's tool replaces the tools module's, which replaces a built-in; each replacement is reported", async () => {
    const module = await loadToolsModule(fixture("mixed.mjs"));
    const replaced: ReplacedTool[] = [];
    const tools = toolDefinitions(
      { tools: [configSearch], builtinTools: { files: false } },
      { module: [...module, fetchUrl] },
      (entry) => replaced.push(entry),
    );
    expect(tools.map((tool) => tool.name)).toEqual(["deploy", "fetch_url", "search"]);
    const run = (name: string, args: Record<string, unknown>) =>
      tools
        .find((tool) => tool.name === name)!
        .forRun(scope("U_ALICE"))
        .execute("c1", args);
    expect(textOf(await run("search", { query: "q" }))).toBe("config search: q");
    expect(textOf(await run("fetch_url", { url: "https://example.com" }))).toBe(
      "module fetch: https://example.com",
    );
    expect(replaced).toEqual([
      { name: "fetch_url", source: "built-in", by: "tools module" },
      { name: "search", source: "tools module", by: "config module" },
    ]);
  });

  it("config approvals override the policy of every source's tool, the tools module's included", async () => {
    const module = await loadToolsModule(fixture("mixed.mjs"));
    const tools = toolDefinitions(
      { approvals: { deploy: "never", search: "ask", fetch_url: "ask" } },
      { module },
    );
    const policy = (name: string) =>
      tools.find((tool) => tool.name === name)!.forRun(scope("U_ALICE")).approval;
    expect(policy("deploy")).toBe("never");
    expect(policy("search")).toBe("ask");
    expect(policy("fetch_url")).toBe("ask");
  });
});
