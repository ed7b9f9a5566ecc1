import { rm, writeFile } from "node:fs/promises";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join, resolve } from "node:path";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { afterEach, describe, expect, it, vi } from "vitest";
import { connectMcpServers, type McpConnectionEvent, type McpToolset } from "../../src/tools/index.js";
import { createEchoServer } from "../fixtures/mcp/echo-server.js";
import { call, tempDir, textOf } from "./helpers.js";

const FIXTURE = resolve(import.meta.dirname, "../fixtures/mcp/echo-server.ts");
/** Short backoff so a test sees several attempts in well under a second. */
const reconnect = { initialDelayMs: 20, maxDelayMs: 100 };

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function connect(servers: Parameters<typeof connectMcpServers>[0]) {
  const events: McpConnectionEvent[] = [];
  const toolset = await connectMcpServers(servers, { onEvent: (event) => events.push(event) });
  cleanups.push(() => toolset.close());
  expect(toolset.failures).toEqual([]);
  return { toolset, events };
}

const tool = (toolset: McpToolset, name: string) => {
  const found = toolset.tools.find((candidate) => candidate.name === name);
  if (!found) throw new Error(`no tool ${name}`);
  return found;
};

const kinds = (events: McpConnectionEvent[]) => events.map((event) => event.type);

/** A stateless streamable-HTTP MCP server on `port` (0 = any). */
async function startHttpServer(port = 0): Promise<Server> {
  const readBody = async (req: IncomingMessage) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString("utf8");
    return text ? JSON.parse(text) : undefined;
  };
  const http = createServer(async (req, res) => {
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
  await new Promise<void>((done) => http.listen(port, "127.0.0.1", done));
  return http;
}

async function stopHttpServer(http: Server): Promise<void> {
  http.closeAllConnections();
  await new Promise<void>((done) => http.close(() => done()));
}

describe("MCP servers that go away", () => {
  it("respawns a stdio server that died; calls meanwhile get an error naming it", async () => {
    const { dir, cleanup } = await tempDir("mcp-down");
    cleanups.push(cleanup);
    const downFile = join(dir, "down");
    const { toolset, events } = await connect({
      fixture: {
        command: process.execPath,
        args: ["--import", "tsx", FIXTURE, "--stdio"],
        env: { FIXTURE_DOWN_FILE: downFile },
        approval: "never",
        reconnect,
      },
    });
    const firstPid = Number(textOf(await call(tool(toolset, "fixture__pid"), {})));

    // The server crashes and cannot come back yet.
    await writeFile(downFile, "");
    process.kill(firstPid, "SIGKILL");
    await vi.waitFor(() => expect(kinds(events)).toContain("reconnect_failed"), { timeout: 10_000 });
    expect(events[0]).toEqual({
      type: "disconnected",
      server: "fixture",
      reason: "the server closed the connection",
    });
    expect(toolset.isConnected("fixture")).toBe(false);
    await expect(call(tool(toolset, "fixture__echo"), { text: "anyone?" })).rejects.toThrow(
      /^The MCP server "fixture" is not connected \(the server exited before it answered \(server said: fixture server is down\)\)\. Threadline is reconnecting/,
    );

    // It can start again: the next attempt respawns it, and its tools work.
    await rm(downFile);
    await vi.waitFor(() => expect(kinds(events)).toContain("reconnected"), { timeout: 10_000 });
    expect(textOf(await call(tool(toolset, "fixture__echo"), { text: "back" }))).toBe("back");
    expect(Number(textOf(await call(tool(toolset, "fixture__pid"), {})))).not.toBe(firstPid);
    const failed = events.filter((event) => event.type === "reconnect_failed");
    expect(failed.map((event) => event.attempt)).toEqual(failed.map((_, index) => index + 1));
    // Exponential, bounded by maxDelayMs.
    expect(failed.map((event) => event.retryInMs).slice(0, 4)).toEqual(
      [20, 40, 80, 100].slice(0, failed.length),
    );
    expect(events.at(-1)).toMatchObject({ type: "reconnected", server: "fixture", toolsChanged: false });
  }, 30_000);

  it("reconnects to an HTTP server that stopped answering once it is back", async () => {
    let http = await startHttpServer();
    const { port } = http.address() as AddressInfo;
    cleanups.push(() => stopHttpServer(http));
    const { toolset, events } = await connect({
      hosted: { url: `http://127.0.0.1:${port}/mcp`, approval: "never", reconnect },
    });
    expect(textOf(await call(tool(toolset, "hosted__echo"), { text: "up" }))).toBe("up");

    await stopHttpServer(http);
    await expect(call(tool(toolset, "hosted__echo"), { text: "down" })).rejects.toThrow(
      /^The MCP server "hosted" could not be reached during the call \(fetch failed \(\w+\)\); whether the call took effect is unknown/,
    );
    await vi.waitFor(() => expect(kinds(events)).toContain("reconnect_failed"));
    await expect(call(tool(toolset, "hosted__echo"), { text: "down" })).rejects.toThrow(
      /^The MCP server "hosted" is not connected/,
    );

    http = await startHttpServer(port);
    await vi.waitFor(() => expect(kinds(events)).toContain("reconnected"), { timeout: 10_000 });
    expect(textOf(await call(tool(toolset, "hosted__echo"), { text: "again" }))).toBe("again");
    expect(events[0]).toMatchObject({ type: "disconnected", server: "hosted" });
  });

  it("stops reconnecting when closed", async () => {
    const { dir, cleanup } = await tempDir("mcp-closed");
    cleanups.push(cleanup);
    const downFile = join(dir, "down");
    const { toolset, events } = await connect({
      fixture: {
        command: process.execPath,
        args: ["--import", "tsx", FIXTURE, "--stdio"],
        env: { FIXTURE_DOWN_FILE: downFile },
        reconnect,
      },
    });
    const pid = Number(textOf(await call(tool(toolset, "fixture__pid"), {})));
    await writeFile(downFile, "");
    process.kill(pid, "SIGKILL");
    await vi.waitFor(() => expect(kinds(events)).toContain("reconnect_failed"), { timeout: 10_000 });
    await toolset.close();
    const seen = events.length;
    await new Promise((done) => setTimeout(done, 300));
    expect(events.length).toBe(seen);
  }, 30_000);
});
