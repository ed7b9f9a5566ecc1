import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { getDefaultEnvironment, StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import {
  StreamableHTTPClientTransport,
  StreamableHTTPError,
} from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { ToolError } from "./define-tool.js";
import type { McpServerConfig, McpStdioServer } from "./mcp.js";
import { wholeNumberSetting } from "./setting-schemas.js";

/** A tool as the server lists it. */
export interface ListedMcpTool {
  name: string;
  description?: string | undefined;
  inputSchema: unknown;
}

/** An open session with a server, and the tools it listed. */
export interface OpenedMcpClient {
  client: Client;
  tools: ListedMcpTool[];
}

/** What a connection reports about its life after the first connect (the worker logs these). */
export type McpConnectionEvent =
  | { type: "disconnected"; server: string; reason: string }
  | { type: "reconnect_failed"; server: string; attempt: number; reason: string; retryInMs: number }
  | { type: "reconnected"; server: string; attempt: number; downMs: number; toolsChanged: boolean };

/** Backoff of reconnect attempts: immediately, then `initialDelayMs`, doubling up to `maxDelayMs`. */
export const mcpReconnectSettingsSchema = z.strictObject({
  /** Delay after the first failed attempt. Default 1 000 ms. */
  initialDelayMs: wholeNumberSetting("1000").optional(),
  /** The longest delay between attempts; they go on at this pace until the server is back. Default 60 000 ms. */
  maxDelayMs: wholeNumberSetting("60000").optional(),
});

/** See {@link mcpReconnectSettingsSchema}. */
export type McpReconnectOptions = z.infer<typeof mcpReconnectSettingsSchema>;

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

/**
 * Whether `config` is a server started over stdio: it has a `command`. An entry that carries `command:
 * undefined` (a JS config module's `command: process.env.X`) is reached by its `url`, as the config check
 * decided.
 */
export function isStdioServer(config: McpServerConfig): config is McpStdioServer {
  return "command" in config && config.command !== undefined;
}

function describeStartFailure(config: McpServerConfig, err: unknown, stderr: string): string {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  let cause: string | undefined;
  for (let link = (err as { cause?: unknown } | undefined)?.cause; link && !cause; ) {
    cause = (link as { code?: string }).code;
    link = (link as { cause?: unknown }).cause;
  }
  const message = err instanceof Error ? err.message : String(err);
  const stdio = isStdioServer(config) ? config : undefined;
  const http = isStdioServer(config) ? undefined : config;
  let reason: string;
  if (stdio && code === "ENOENT") reason = `the command "${stdio.command}" was not found`;
  else if (stdio && code === "EACCES") reason = `the command "${stdio.command}" is not executable`;
  else if (stdio && /Connection closed/i.test(message)) reason = "the server exited before it answered";
  else if (http && (cause || /fetch failed/i.test(message)))
    reason = `could not connect to ${http.url}${cause ? ` (${cause})` : ""}`;
  else reason = message;
  const tail = stderr.trim().split("\n").slice(-3).join(" | ");
  return tail ? `${reason} (server said: ${tail.slice(0, 300)})` : reason;
}

/**
 * Starts (stdio) or reaches (streamable HTTP) a server and lists its tools, within `startupTimeoutMs`.
 * Stdio servers get a minimal safe environment plus their configured variables.
 * @throws Error whose message says in plain words why the server cannot be used.
 */
export async function openMcpClient(
  config: McpServerConfig,
  info: { name: string; version: string },
): Promise<OpenedMcpClient> {
  const client = new Client(info);
  let stderr = "";
  let transport: StdioClientTransport | StreamableHTTPClientTransport;
  if (isStdioServer(config)) {
    const stdio = new StdioClientTransport({
      command: config.command,
      args: config.args ?? [],
      env: { ...getDefaultEnvironment(), ...config.env },
      stderr: "pipe",
      ...(config.cwd ? { cwd: config.cwd } : {}),
    });
    stdio.stderr?.on("data", (chunk: Buffer) => {
      stderr = (stderr + chunk.toString("utf8")).slice(-4000);
    });
    transport = stdio;
  } else {
    const requestInit = config.headers ? { requestInit: { headers: config.headers } } : {};
    transport = new StreamableHTTPClientTransport(new URL(config.url), requestInit);
  }
  const limit = config.startupTimeoutMs ?? 30_000;
  try {
    await withTimeout(client.connect(transport), limit, "starting the server");
    const tools: ListedMcpTool[] = [];
    let cursor: string | undefined;
    do {
      const page = await withTimeout(client.listTools(cursor ? { cursor } : {}), limit, "listing its tools");
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor);
    return { client, tools };
  } catch (err) {
    await client.close().catch(() => {});
    throw new Error(describeStartFailure(config, err, stderr));
  }
}

/** True for failures of the link to the server (not answers from it): reconnecting may help. */
function isLinkFailure(err: unknown): boolean {
  if (err instanceof StreamableHTTPError) return true;
  if (err instanceof McpError) return err.code === ErrorCode.ConnectionClosed;
  if (!(err instanceof Error)) return false;
  if (/^(Not connected|fetch failed)$/i.test(err.message)) return true;
  const code = (err.cause as { code?: unknown } | undefined)?.code;
  return typeof code === "string" && /^(E[A-Z]+|UND_ERR_\w+)$/.test(code);
}

function reasonOf(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  const code = (err as { cause?: { code?: unknown } } | undefined)?.cause?.code;
  return typeof code === "string" ? `${message} (${code})` : message;
}

const sameTools = (a: ListedMcpTool[], b: ListedMcpTool[]) =>
  a.map((tool) => tool.name).join("\n") === b.map((tool) => tool.name).join("\n");

/**
 * One server's connection for the life of the worker. When the link is lost — a stdio server exits, an
 * HTTP server stops answering — it reconnects in the background (stdio: a new process), at once and
 * then with exponential backoff bounded by `maxDelayMs`, until the server is back or `close` is called.
 * A call while it is down waits for an attempt already under way, else fails at once with a
 * {@link ToolError} naming the server. The tool list stays the one of the first connect.
 */
export class McpConnection {
  private client: Client | undefined;
  private closed = false;
  private attempt = 0;
  private downSince = 0;
  private reason = "";
  private nextAttemptAt = 0;
  private timer: NodeJS.Timeout | undefined;
  private inFlight: Promise<void> | undefined;
  private readonly initialDelayMs: number;
  private readonly maxDelayMs: number;
  /** The tools the server listed when the worker started. */
  readonly tools: ListedMcpTool[];

  constructor(
    readonly server: string,
    opened: OpenedMcpClient,
    private readonly open: () => Promise<OpenedMcpClient>,
    private readonly onEvent: (event: McpConnectionEvent) => void,
    reconnect: McpReconnectOptions = {},
  ) {
    this.initialDelayMs = reconnect.initialDelayMs ?? 1_000;
    this.maxDelayMs = Math.max(this.initialDelayMs, reconnect.maxDelayMs ?? 60_000);
    this.tools = opened.tools;
    this.adopt(opened.client);
  }

  /** Whether the server can be called now. */
  get connected(): boolean {
    return this.client !== undefined;
  }

  /**
   * Calls a tool on the server. @throws ToolError naming the server when it is down or the link fails
   * during the call; other errors (the run's abort, a timeout, a protocol error) as the SDK throws them.
   */
  async callTool(
    name: string,
    args: Record<string, unknown>,
    options: { signal?: AbortSignal; timeout: number },
  ): Promise<unknown> {
    if (!this.client && this.inFlight) await this.inFlight;
    const client = this.client;
    if (!client) throw new ToolError(this.downMessage());
    try {
      return await client.callTool({ name, arguments: args }, undefined, {
        timeout: options.timeout,
        ...(options.signal ? { signal: options.signal } : {}),
      });
    } catch (err) {
      if (options.signal?.aborted || !isLinkFailure(err)) throw err;
      this.lost(client, reasonOf(err));
      throw new ToolError(
        `The MCP server "${this.server}" could not be reached during the call (${reasonOf(err)}); whether the call took effect is unknown. Reconnecting; try again in a moment.`,
      );
    }
  }

  /** Stops reconnecting and closes the session (stops a stdio server). Idempotent; never rejects. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    const client = this.client;
    this.client = undefined;
    await client?.close().catch(() => {});
  }

  private adopt(client: Client): void {
    this.client = client;
    client.onclose = () => this.lost(client, "the server closed the connection");
  }

  private downMessage(): string {
    const wait = Math.max(0, Math.ceil((this.nextAttemptAt - Date.now()) / 1000));
    return `The MCP server "${this.server}" is not connected (${this.reason}). Threadline is reconnecting${wait > 0 ? ` (next attempt in ${wait} s)` : ""}; try again in a moment.`;
  }

  private lost(client: Client, reason: string): void {
    if (this.closed || client !== this.client) return;
    this.client = undefined;
    void client.close().catch(() => {});
    this.downSince = Date.now();
    this.reason = reason;
    this.attempt = 0;
    this.onEvent({ type: "disconnected", server: this.server, reason });
    this.schedule(0);
  }

  private schedule(delayMs: number): void {
    this.nextAttemptAt = Date.now() + delayMs;
    this.timer = setTimeout(() => {
      this.inFlight = this.reconnect().finally(() => {
        this.inFlight = undefined;
      });
    }, delayMs);
    this.timer.unref();
  }

  private async reconnect(): Promise<void> {
    if (this.closed) return;
    this.attempt += 1;
    try {
      const opened = await this.open();
      if (this.closed) {
        await opened.client.close().catch(() => {});
        return;
      }
      this.adopt(opened.client);
      this.onEvent({
        type: "reconnected",
        server: this.server,
        attempt: this.attempt,
        downMs: Date.now() - this.downSince,
        toolsChanged: !sameTools(this.tools, opened.tools),
      });
    } catch (err) {
      if (this.closed) return;
      this.reason = reasonOf(err);
      const retryInMs = Math.min(this.maxDelayMs, this.initialDelayMs * 2 ** (this.attempt - 1));
      this.onEvent({
        type: "reconnect_failed",
        server: this.server,
        attempt: this.attempt,
        reason: this.reason,
        retryInMs,
      });
      this.schedule(retryInMs);
    }
  }
}
