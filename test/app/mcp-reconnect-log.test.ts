import { resolve } from "node:path";
import { describe, expect, it, vi } from "vitest";
import { connectConfiguredMcpServers } from "../../src/app/mcp.js";
import { call, textOf } from "../tools/helpers.js";

const FIXTURE = resolve(import.meta.dirname, "../fixtures/mcp/echo-server.ts");

describe("the worker's MCP servers", () => {
  it("logs that a server went away and that it was reconnected", async () => {
    const lines: string[] = [];
    const at = (level: string) => (_fields: Record<string, unknown>, message: string) => {
      lines.push(`${level}: ${message}`);
    };
    const log = { info: at("info"), warn: at("warn"), error: at("error") };
    const toolset = await connectConfiguredMcpServers(
      {
        mcpServers: {
          fixture: {
            command: process.execPath,
            args: ["--import", "tsx", FIXTURE, "--stdio"],
            reconnect: { initialDelayMs: 20, maxDelayMs: 100 },
          },
        },
      },
      log,
    );
    try {
      const pid = toolset.tools.find((tool) => tool.name === "fixture__pid")!;
      const first = Number(textOf(await call(pid, {})));
      process.kill(first, "SIGKILL");
      await vi.waitFor(() => expect(lines).toContain('info: MCP server "fixture" reconnected'), {
        timeout: 10_000,
      });
      expect(lines).toContain(
        'warn: MCP server "fixture" went away (the server closed the connection); reconnecting. Its tools answer with an error meanwhile.',
      );
      expect(Number(textOf(await call(pid, {})))).not.toBe(first);
    } finally {
      await toolset.close();
    }
  }, 20_000);
});
