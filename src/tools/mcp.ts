import { z } from "zod";
import type { AgentToolResult, ImageContent, TextContent } from "../agent/index.js";
import { approvalNeedSchema } from "./approval-policy.js";
import { type AnyToolDefinition, defineTool, ToolError } from "./define-tool.js";
import {
  type ListedMcpTool,
  McpConnection,
  type McpConnectionEvent,
  mcpReconnectSettingsSchema,
  openMcpClient,
} from "./mcp-connection.js";
import {
  flagSetting,
  textListSetting,
  textRecordSetting,
  textSetting,
  wholeNumberSetting,
} from "./setting-schemas.js";

/** The fields of every MCP server entry, however it is reached. */
const commonShape = {
  /** Approval of the server's tools. Default `"ask"`. */
  approval: approvalNeedSchema.optional(),
  /** Per-tool approval, by the tool's name on the server; wins over `approval`. */
  toolApproval: z.record(z.string(), approvalNeedSchema).optional(),
  /**
   * Tools (by their name on the server, or `<server>__<tool>`) that a steer or interrupt arriving while they
   * run may abort — waits and reads only. Default none: MCP tools run to the end.
   */
  interruptible: textListSetting('["wait_for_build"]').optional(),
  /** Set `false` to keep the entry but not connect. Default true. */
  enabled: flagSetting().optional(),
  /** Time allowed to start and list tools. Default 30 000 ms. */
  startupTimeoutMs: wholeNumberSetting("30000").optional(),
  /** Time limit of one tool call. Default 120 000 ms. */
  callTimeoutMs: wholeNumberSetting("120000").optional(),
  /** Backoff of reconnect attempts after the server went away (stdio: respawned; HTTP: reached again). */
  reconnect: mcpReconnectSettingsSchema.optional(),
};

const stdioCommand = textSetting('"npx"');
/** How a server started as a child process is run. */
const stdioShape = {
  command: stdioCommand,
  args: textListSetting('["-y", "@modelcontextprotocol/server-github"]').optional(),
  /** Added to a minimal safe environment (the worker's secrets are not inherited). */
  env: textRecordSetting("{ GITHUB_TOKEN: process.env.GITHUB_TOKEN }").optional(),
  cwd: textSetting('"/srv/tools"').optional(),
};

const httpUrl = z
  .string({ error: "must be a URL, for example https://mcp.example.com/mcp" })
  .refine((value) => URL.canParse(value) && /^https?:/.test(value), {
    error: "must be an http(s) URL, for example https://mcp.example.com/mcp",
  });
/** How a server reached over streamable HTTP is addressed. */
const httpShape = {
  url: httpUrl,
  headers: textRecordSetting('{ Authorization: "Bearer …" }').optional(),
};

/** What every MCP server entry may say besides how to reach it. */
export const mcpServerCommonSchema = z.strictObject(commonShape);
/** A server started as a child process, spoken to over stdio. */
export const mcpStdioServerSchema = z.strictObject({ ...stdioShape, ...commonShape });
/** A server reached over streamable HTTP. */
export const mcpHttpServerSchema = z.strictObject({ ...httpShape, ...commonShape });

/** See {@link mcpServerCommonSchema}. */
export type McpServerCommon = z.infer<typeof mcpServerCommonSchema>;
/** See {@link mcpStdioServerSchema}. */
export type McpStdioServer = z.infer<typeof mcpStdioServerSchema>;
/** See {@link mcpHttpServerSchema}. */
export type McpHttpServer = z.infer<typeof mcpHttpServerSchema>;
/** One configured MCP server. */
export type McpServerConfig = McpStdioServer | McpHttpServer;

/**
 * One MCP server entry (a value of `mcpServers` in the config module): the stdio and the HTTP fields in
 * one object, so a wrong field gets its own message ("url must be an http(s) URL") rather than "matches
 * neither kind", and exactly one of `command` / `url` is required. That check is what makes a valid
 * value an {@link McpServerConfig}, hence the type is stated, not inferred.
 */
export const mcpServerSchema = z
  .strictObject({
    ...stdioShape,
    command: stdioCommand.optional(),
    ...httpShape,
    url: httpUrl.optional(),
    ...commonShape,
  })
  .superRefine((server, ctx) => {
    if ((server.command === undefined) === (server.url === undefined))
      ctx.addIssue({
        code: "custom",
        message:
          'needs either command (a server started over stdio, e.g. command: "npx") or url (streamable HTTP, e.g. url: "https://mcp.example.com/mcp"), not both',
      });
  }) as unknown as z.ZodType<McpServerConfig, McpServerConfig>;

/** A server that could not be used, with the reason in plain words. */
export interface McpFailure {
  server: string;
  reason: string;
}

/** The connected servers' tools. */
export interface McpToolset {
  tools: AnyToolDefinition[];
  /** Names of the servers that connected at start-up (they are reconnected when they go away). */
  connected: string[];
  failures: McpFailure[];
  /** Whether `server` can be called right now (false while it is being reconnected, or unknown). */
  isConnected(server: string): boolean;
  /** Stops reconnecting and closes every connection (stops stdio servers). Never rejects. */
  close(): Promise<void>;
}

/** Options of {@link connectMcpServers}. */
export interface ConnectMcpOptions {
  /** Reported to servers as the client's name. Default "threadline". */
  clientName?: string;
  clientVersion?: string;
  /** Called once per server that failed at start-up; the others still connect. (Not retried.) */
  onFailure?: (failure: McpFailure) => void;
  /** Disconnects and reconnect attempts of servers that had connected. Must not throw. */
  onEvent?: (event: McpConnectionEvent) => void;
}

/** The name the model sees for a server's tool: `<server>__<tool>`, within the 64-character limit. */
export function mcpToolName(server: string, tool: string): string {
  const clean = (text: string) => text.replace(/[^a-zA-Z0-9_-]+/g, "_");
  const name = `${clean(server)}__${clean(tool)}`;
  return name.length <= 64 ? name : name.slice(0, 64);
}

type McpContentBlock = { type?: string; [key: string]: unknown };

/** Converts an MCP tool result's content blocks to what the model can read. */
export function mcpContentToResult(result: {
  content?: unknown;
  structuredContent?: unknown;
  isError?: unknown;
}): AgentToolResult {
  const content: (TextContent | ImageContent)[] = [];
  for (const block of (Array.isArray(result.content) ? result.content : []) as McpContentBlock[]) {
    if (block.type === "text" && typeof block.text === "string")
      content.push({ type: "text", text: block.text });
    else if (block.type === "image" && typeof block.data === "string")
      content.push({ type: "image", data: block.data, mimeType: String(block.mimeType ?? "image/png") });
    else if (block.type === "resource") {
      const resource = (block.resource ?? {}) as { uri?: string; text?: string; mimeType?: string };
      content.push({
        type: "text",
        text:
          typeof resource.text === "string"
            ? resource.text
            : `[resource ${resource.uri ?? ""} (${resource.mimeType ?? "binary"})]`,
      });
    } else if (block.type === "resource_link")
      content.push({ type: "text", text: `[link: ${String(block.name ?? "")} ${String(block.uri ?? "")}]` });
    else content.push({ type: "text", text: `[${String(block.type ?? "unknown")} content omitted]` });
  }
  if (content.length === 0 && result.structuredContent !== undefined)
    content.push({ type: "text", text: JSON.stringify(result.structuredContent, null, 2) });
  if (content.length === 0) content.push({ type: "text", text: "(no output)" });
  return { content, details: { structuredContent: result.structuredContent } };
}

function parametersOf(inputSchema: unknown): z.ZodObject {
  try {
    const schema = z.fromJSONSchema(inputSchema as Parameters<typeof z.fromJSONSchema>[0]);
    if (schema instanceof z.ZodObject) return schema;
  } catch {
    // Fall through: a schema zod cannot read still lets the model call the tool.
  }
  return z.looseObject({});
}

function mcpTool(
  server: string,
  config: McpServerConfig,
  connection: McpConnection,
  tool: ListedMcpTool,
): AnyToolDefinition {
  const name = mcpToolName(server, tool.name);
  return defineTool({
    name,
    description: `${tool.description?.trim() || `The ${tool.name} tool`} (from the MCP server "${server}")`,
    parameters: parametersOf(tool.inputSchema),
    approval: config.toolApproval?.[tool.name] ?? config.toolApproval?.[name] ?? config.approval ?? "ask",
    interruptible: config.interruptible?.some((entry) => entry === tool.name || entry === name) ?? false,
    async execute(args, ctx) {
      const result = (await connection.callTool(tool.name, args, {
        signal: ctx.signal,
        timeout: config.callTimeoutMs ?? 120_000,
      })) as { content?: unknown; structuredContent?: unknown; isError?: unknown };
      const converted = mcpContentToResult(result);
      if (result.isError === true) {
        const text = converted.content.map((block) => (block.type === "text" ? block.text : "")).join("\n");
        throw new ToolError(`${name} reported an error: ${text.trim() || "(no details)"}`);
      }
      return converted;
    },
  });
}

/**
 * Connects the enabled servers in parallel and offers their tools (named `<server>__<tool>`, approval
 * `"ask"` unless configured). A server that fails to start, times out or cannot list its tools is
 * reported through `onFailure` and in `failures`; it never stops the others or the bot. A server that
 * connected and later goes away is reconnected with backoff (see {@link McpConnection}); meanwhile its
 * tools answer with an error naming it.
 */
export async function connectMcpServers(
  servers: Record<string, McpServerConfig>,
  options: ConnectMcpOptions = {},
): Promise<McpToolset> {
  const info = { name: options.clientName ?? "threadline", version: options.clientVersion ?? "0.1.0" };
  const onEvent = (event: McpConnectionEvent) => {
    try {
      options.onEvent?.(event);
    } catch {
      // A listener's failure must not stop reconnecting.
    }
  };
  const entries = Object.entries(servers).filter(([, config]) => config.enabled !== false);
  const settled = await Promise.allSettled(entries.map(([, config]) => openMcpClient(config, info)));
  const tools: AnyToolDefinition[] = [];
  const connections = new Map<string, McpConnection>();
  const failures: McpFailure[] = [];
  settled.forEach((outcome, index) => {
    const [server, config] = entries[index]!;
    if (outcome.status === "fulfilled") {
      const open = () => openMcpClient(config, info);
      const connection = new McpConnection(server, outcome.value, open, onEvent, config.reconnect);
      connections.set(server, connection);
      tools.push(...connection.tools.map((tool) => mcpTool(server, config, connection, tool)));
    } else {
      const failure = { server, reason: (outcome.reason as Error).message };
      failures.push(failure);
      options.onFailure?.(failure);
    }
  });
  return {
    tools,
    connected: [...connections.keys()],
    failures,
    isConnected: (server) => connections.get(server)?.connected ?? false,
    async close() {
      await Promise.all([...connections.values()].map((connection) => connection.close()));
    },
  };
}
