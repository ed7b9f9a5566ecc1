import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { resolve } from "node:path";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { toolParametersSchema } from "../../src/llm/tool-schema.js";
import {
  connectMcpServers,
  type McpFailure,
  type McpServerConfig,
  type McpToolset,
} from "../../src/tools/index.js";
import { createEchoServer } from "../fixtures/mcp/echo-server.js";
import { call, textOf } from "./helpers.js";

const FIXTURE = resolve(import.meta.dirname, "../fixtures/mcp/echo-server.ts");
/** The fixture server started over stdio, through tsx. */
const fixture = { command: process.execPath, args: ["--import", "tsx", FIXTURE, "--stdio"] };

let toolset: McpToolset;
const reported: McpFailure[] = [];
let http: Server;
let httpUrl: string;
let unreachableUrl: string;

async function readBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString("utf8");
  return text ? JSON.parse(text) : undefined;
}

beforeAll(async () => {
  // A streamable-HTTP MCP server (stateless: one server per request), as a hosted server would be.
  http = createServer(async (req, res) => {
    const body = await readBody(req);
    const server = createEchoServer();
    const transport = new StreamableHTTPServerTransport({});
    res.on("close", () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  });
  await new Promise<void>((done) => http.listen(0, "127.0.0.1", done));
  httpUrl = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;

  // A port nothing listens on: bound once, then closed.
  const probe = createServer();
  await new Promise<void>((done) => probe.listen(0, "127.0.0.1", done));
  unreachableUrl = `http://127.0.0.1:${(probe.address() as AddressInfo).port}/mcp`;
  await new Promise<void>((done) => probe.close(() => done()));

  // A worker secret that stdio servers must not inherit.
  const previousKey = process.env.OPENAI_API_KEY;
  process.env.OPENAI_API_KEY = "sk-should-not-leak";
  toolset = await connectMcpServers(
    {
      fixture: { ...fixture, env: { FIXTURE_GREETING: "hello" }, toolApproval: { echo: "never" } },
      hosted: { url: httpUrl, approval: "never" },
      missing: { command: "threadline-no-such-binary-for-tests" },
      crashing: {
        command: process.execPath,
        args: ["-e", "console.error('GITHUB_TOKEN is not set'); process.exit(1)"],
      },
      unreachable: { url: unreachableUrl, startupTimeoutMs: 5_000 },
      disabled: { command: "threadline-no-such-binary-either", enabled: false },
    },
    { onFailure: (failure) => reported.push(failure) },
  );
  if (previousKey === undefined) delete process.env.OPENAI_API_KEY;
  else process.env.OPENAI_API_KEY = previousKey;
}, 30_000);

afterAll(async () => {
  await toolset?.close();
  await new Promise<void>((done) => http.close(() => done()));
});

const tool = (name: string) => {
  const found = toolset.tools.find((candidate) => candidate.name === name);
  if (!found) throw new Error(`no tool ${name}; have ${toolset.tools.map((t) => t.name).join(", ")}`);
  return found;
};

describe("MCP servers", () => {
  it("offers the tools of the servers that started, named <server>__<tool>", () => {
    expect(toolset.connected.sort()).toEqual(["fixture", "hosted"]);
    expect(toolset.tools.map((t) => t.name).sort()).toEqual([
      "fixture__echo",
      "fixture__env",
      "fixture__fail",
      "fixture__pid",
      "fixture__wait",
      "hosted__echo",
      "hosted__env",
      "hosted__fail",
      "hosted__pid",
      "hosted__wait",
    ]);
    expect(tool("fixture__echo").description).toBe('Repeats the text. (from the MCP server "fixture")');
  });

  it("shows the model the server's JSON Schema and validates calls against it", () => {
    const schema = toolParametersSchema(tool("fixture__echo").parameters);
    expect(schema).toMatchObject({
      type: "object",
      properties: { text: { type: "string", description: "What to repeat" }, times: { type: "integer" } },
      required: ["text"],
    });
    expect(tool("fixture__echo").parameters.safeParse({ times: 2 }).success).toBe(false);
  });

  it("applies approval per server and per tool, default ask", () => {
    expect(tool("fixture__echo").approval).toBe("never");
    expect(tool("fixture__fail").approval).toBe("ask");
    expect(tool("hosted__fail").approval).toBe("never");
  });

  it("calls tools over stdio and streamable HTTP", async () => {
    expect(textOf(await call(tool("fixture__echo"), { text: "hi", times: 3 }))).toBe("hi hi hi");
    expect(textOf(await call(tool("hosted__echo"), { text: "over http" }))).toBe("over http");
  });

  it("turns a server-side tool error into a readable failure", async () => {
    await expect(call(tool("fixture__fail"), {})).rejects.toThrow(
      "fixture__fail reported an error: disk full",
    );
  });

  it("starts stdio servers with only a safe environment plus their configured variables", async () => {
    // OPENAI_API_KEY was set in this process when the server started (see beforeAll).
    expect(textOf(await call(tool("fixture__env"), {}))).toBe("FIXTURE_GREETING=hello OPENAI_API_KEY=");
  });

  it("cancels a call when the run is aborted", async () => {
    const controller = new AbortController();
    const pending = call(tool("fixture__wait"), {}, { signal: controller.signal });
    setTimeout(() => controller.abort(), 50);
    await expect(pending).rejects.toThrow(/was stopped before it finished/);
    // The connection is still usable afterwards.
    expect(textOf(await call(tool("fixture__echo"), { text: "still here" }))).toBe("still here");
  });

  it("a server entry whose command is present but undefined is reached by its url", async () => {
    // As a JS config module may write it (`command: process.env.MCP_COMMAND`); the config check accepts it.
    const servers = { hosted: { command: undefined, url: httpUrl } } as unknown as Record<
      string,
      McpServerConfig
    >;
    const failures: McpFailure[] = [];
    const reached = await connectMcpServers(servers, { onFailure: (failure) => failures.push(failure) });
    try {
      expect(failures).toEqual([]);
      expect(reached.connected).toEqual(["hosted"]);
    } finally {
      await reached.close();
    }
  });

  it("reports servers that fail to start, with the reason, and keeps the others", () => {
    const byServer = Object.fromEntries(reported.map((failure) => [failure.server, failure.reason]));
    expect(Object.keys(byServer).sort()).toEqual(["crashing", "missing", "unreachable"]);
    expect(byServer.missing).toBe('the command "threadline-no-such-binary-for-tests" was not found');
    expect(byServer.crashing).toBe(
      "the server exited before it answered (server said: GITHUB_TOKEN is not set)",
    );
    expect(byServer.unreachable).toBe(`could not connect to ${unreachableUrl} (ECONNREFUSED)`);
    expect(toolset.failures).toEqual(reported);
  });
});
