import type { ThreadlineConfig } from "../config/index.js";
import type { RunLogger } from "../runs/index.js";
import { connectMcpServers, type McpToolset } from "../tools/index.js";

/**
 * Connects the config module's MCP servers. A server that fails to start is logged with the reason and
 * left out; the worker runs without its tools.
 */
export async function connectConfiguredMcpServers(
  config: ThreadlineConfig,
  log: RunLogger,
): Promise<McpToolset> {
  const servers = config.mcpServers ?? {};
  const toolset = await connectMcpServers(servers, {
    onFailure: ({ server, reason }) =>
      log.warn(
        { server, reason },
        `MCP server "${server}" is unavailable: ${reason}. The bot runs without its tools.`,
      ),
  });
  if (toolset.connected.length > 0)
    log.info(
      { servers: toolset.connected, tools: toolset.tools.map((tool) => tool.name) },
      "MCP servers connected",
    );
  return toolset;
}
