import type { Stream } from "node:stream";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { getDefaultEnvironment, StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { z } from "zod";
import type { AgentToolResult, ImageContent, TextContent } from "../agent/index.js";
import { type AnyToolDefinition, type ApprovalDecisionNeeded, defineTool, ToolError } from "./define-tool.js";

/** What every MCP server entry may say besides how to reach it. */
export interface McpServerCommon {
  /** Approval of the server's tools. Default `"ask"`. */
  approval?: ApprovalDecisionNeeded;
  /** Per-tool approval, by the tool's name on the server; wins over `approval`. */
  toolApproval?: Record<string, ApprovalDecisionNeeded>;
  /** Set `false` to keep the entry but not connect. Default true. */
  enabled?: boolean;
  /** Time allowed to start and list tools. Default 30 000 ms. */
  startupTimeoutMs?: number;
  /** Time limit of one tool call. Default 120 000 ms. */
  callTimeoutMs?: number;
}

/** A server started as a child process, spoken to over stdio. */
export interface McpStdioServer extends McpServerCommon {
  command: string;
  args?: string[];
  /** Added to a minimal safe environment (the worker's secrets are not inherited). */
  env?: Record<string, string>;
  cwd?: string;
}

/** A server reached over streamable HTTP. */
export interface McpHttpServer extends McpServerCommon {
  url: string;
  headers?: Record<string, string>;
}

/** One configured MCP server. */
export type McpServerConfig = McpStdioServer | McpHttpServer;

/** A server that could not be used, with the reason in plain words. */
export interface McpFailure {
  server: string;
  reason: string;
}

/** The connected servers' tools. */
export interface McpToolset {
  tools: AnyToolDefinition[];
  /** Names of the servers that connected. */
  connected: string[];
  failures: McpFailure[];
  /** Closes every connection (stops stdio servers). Never rejects. */
  close(): Promise<void>;
}

/** Options of {@link connectMcpServers}. */
export interface ConnectMcpOptions {
  /** Reported to servers as the client's name. Default "threadline". */
  clientName?: string;
  clientVersion?: string;
  /** Called once per server that failed; the others still connect. */
  onFailure?: (failure: McpFailure) => void;
}

/** The name the model sees for a server's tool: `<server>__<tool>`, within the 64-character limit. */
export function mcpToolName(server: string, tool: string): string {
  const clean = (text: string) => text.replace(/[^a-zA-Z0-9_-]+/g, "_");
  const name = `${clean(server)}__${clean(tool)}`;
  return name.length <= 64 ? name : name.slice(0, 64);
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`${what} did not finish within ${Math.round(ms / 1000)} s`)),
      ms,
    );
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function describeStartFailure(config: McpServerConfig, err: unknown, stderr: string): string {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  let cause: string | undefined;
  for (let link = (err as { cause?: unknown } | undefined)?.cause; link && !cause; ) {
    cause = (link as { code?: string }).code;
    link = (link as { cause?: unknown }).cause;
  }
  const message = err instanceof Error ? err.message : String(err);
  let reason: string;
  if ("command" in config && code === "ENOENT") reason = `the command "${config.command}" was not found`;
  else if ("command" in config && code === "EACCES")
    reason = `the command "${config.command}" is not executable`;
  else if ("command" in config && /Connection closed/i.test(message))
    reason = "the server exited before it answered";
  else if ("url" in config && (cause || /fetch failed/i.test(message)))
    reason = `could not connect to ${config.url}${cause ? ` (${cause})` : ""}`;
  else reason = message;
  const tail = stderr.trim().split("\n").slice(-3).join(" | ");
  return tail ? `${reason} (server said: ${tail.slice(0, 300)})` : reason;
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

async function connectOne(name: string, config: McpServerConfig, options: ConnectMcpOptions) {
  const client = new Client({
    name: options.clientName ?? "threadline",
    version: options.clientVersion ?? "0.1.0",
  });
  let stderr = "";
  let transport: StdioClientTransport | StreamableHTTPClientTransport;
  if ("command" in config) {
    const stdio = new StdioClientTransport({
      command: config.command,
      args: config.args ?? [],
      env: { ...getDefaultEnvironment(), ...config.env },
      stderr: "pipe",
      ...(config.cwd ? { cwd: config.cwd } : {}),
    });
    (stdio.stderr as Stream | null)?.on("data", (chunk: Buffer) => {
      stderr = (stderr + chunk.toString("utf8")).slice(-4000);
    });
    transport = stdio;
  } else {
    const requestInit = config.headers ? { requestInit: { headers: config.headers } } : {};
    transport = new StreamableHTTPClientTransport(new URL(config.url), requestInit);
  }
  try {
    await withTimeout(
      (async () => {
        await client.connect(transport);
      })(),
      config.startupTimeoutMs ?? 30_000,
      "starting the server",
    );
    const listed: { name: string; description?: string | undefined; inputSchema: unknown }[] = [];
    let cursor: string | undefined;
    do {
      const page = await withTimeout(
        client.listTools(cursor ? { cursor } : {}),
        config.startupTimeoutMs ?? 30_000,
        "listing its tools",
      );
      listed.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor);
    return { client, tools: listed.map((tool) => mcpTool(name, config, client, tool)) };
  } catch (err) {
    await client.close().catch(() => {});
    throw new Error(describeStartFailure(config, err, stderr));
  }
}

function mcpTool(
  server: string,
  config: McpServerConfig,
  client: Client,
  tool: { name: string; description?: string | undefined; inputSchema: unknown },
): AnyToolDefinition {
  const name = mcpToolName(server, tool.name);
  return defineTool({
    name,
    description: `${tool.description?.trim() || `The ${tool.name} tool`} (from the MCP server "${server}")`,
    parameters: parametersOf(tool.inputSchema),
    approval: config.toolApproval?.[tool.name] ?? config.toolApproval?.[name] ?? config.approval ?? "ask",
    async execute(args, ctx) {
      const result = (await client.callTool({ name: tool.name, arguments: args }, undefined, {
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
 * reported through `onFailure` and in `failures`; it never stops the others or the bot.
 */
export async function connectMcpServers(
  servers: Record<string, McpServerConfig>,
  options: ConnectMcpOptions = {},
): Promise<McpToolset> {
  const entries = Object.entries(servers).filter(([, config]) => config.enabled !== false);
  const settled = await Promise.allSettled(
    entries.map(([name, config]) => connectOne(name, config, options)),
  );
  const tools: AnyToolDefinition[] = [];
  const clients: Client[] = [];
  const connected: string[] = [];
  const failures: McpFailure[] = [];
  settled.forEach((outcome, index) => {
    const server = entries[index]![0];
    if (outcome.status === "fulfilled") {
      clients.push(outcome.value.client);
      tools.push(...outcome.value.tools);
      connected.push(server);
    } else {
      const failure = { server, reason: (outcome.reason as Error).message };
      failures.push(failure);
      options.onFailure?.(failure);
    }
  });
  return {
    tools,
    connected,
    failures,
    async close() {
      await Promise.all(clients.map((client) => client.close().catch(() => {})));
    },
  };
}
