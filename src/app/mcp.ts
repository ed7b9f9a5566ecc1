import type { ThreadlineConfig } from "../config/index.js";
import type { RunLogger } from "../runs/index.js";
import { connectMcpServers, type McpConnectionEvent, type McpToolset } from "../tools/index.js";

/** Logs a server's disconnect, each failed reconnect attempt and its return. */
export function logMcpEvent(log: RunLogger, event: McpConnectionEvent): void {
  switch (event.type) {
    case "disconnected":
      log.warn(
        { server: event.server, reason: event.reason },
        `MCP server "${event.server}" went away (${event.reason}); reconnecting. Its tools answer with an error meanwhile.`,
      );
      break;
    case "reconnect_failed":
      log.warn(
        { server: event.server, attempt: event.attempt, reason: event.reason, retryInMs: event.retryInMs },
        `MCP server "${event.server}" could not be reconnected (attempt ${event.attempt}): ${event.reason}. Next attempt in ${Math.round(event.retryInMs / 1000)} s.`,
      );
      break;
    case "reconnected":
      log.info(
        {
          server: event.server,
          attempt: event.attempt,
          downMs: event.downMs,
          toolsChanged: event.toolsChanged,
        },
        event.toolsChanged
          ? `MCP server "${event.server}" reconnected; it now lists other tools than at start-up — restart the worker to offer them`
          : `MCP server "${event.server}" reconnected`,
      );
      break;
  }
}

/**
 * Connects the config module's MCP servers. A server that fails to start is logged with the reason and
 * left out; the worker runs without its tools. A server that goes away later is reconnected with
 * backoff, and each step is logged.
 */
export async function connectConfiguredMcpServers(
  config: ThreadlineConfig,
  log: RunLogger,
): Promise<McpToolset> {
  const servers = config.mcpServers ?? {};
  const toolset = await connectMcpServers(servers, {
    onEvent: (event) => logMcpEvent(log, event),
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
