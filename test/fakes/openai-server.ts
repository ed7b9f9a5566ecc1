import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from "node:http";
import { createServer as createTlsServer } from "node:https";
import type { AddressInfo, Socket } from "node:net";

/**
 * A chunk object (serialized as one SSE `data:` event), a raw string written as-is (SSE comments such as
 * OpenRouter's `: OPENROUTER PROCESSING`, malformed events), or a pause before the next item (a stall).
 */
export type FakeChunk = Record<string, unknown> | { raw: string } | { waitMs: number };

/** One scripted answer of the fake server. */
export type FakeReply =
  | {
      kind: "stream";
      /** Events in order; `[DONE]` is appended unless `done: false`. */
      chunks: FakeChunk[];
      /** Pause before each chunk (ms). Default: the server's `chunkDelayMs`. */
      delayMs?: number;
      /** With no delay: `"burst"` (default) writes all chunks at once, `"immediate"` one per event-loop turn. */
      pacing?: "burst" | "immediate";
      /** Append `data: [DONE]`. Default `true`. */
      done?: boolean;
      /** Destroy the connection after writing this many chunks (a stream cut mid-way). */
      dropAfter?: number;
      /** Stop writing after this many chunks and keep the connection open (until the client leaves). */
      hangAfter?: number;
      /** Before writing chunk number `before` (0-based), wait until `until` settles: a gate a test opens. */
      pause?: { before: number; until: Promise<unknown> };
      headers?: Record<string, string>;
    }
  | { kind: "json"; body: unknown; status?: number; headers?: Record<string, string>; delayMs?: number }
  | {
      kind: "error";
      status: number;
      /** Default: `{ error: { message, type, code } }` in OpenAI's shape. */
      body?: unknown;
      message?: string;
      code?: string;
      headers?: Record<string, string>;
    }
  /** Close the connection without answering. */
  | { kind: "drop" }
  /** Never answer (until the client gives up or the server closes). */
  | { kind: "hang" };

/** The streamed variant of {@link FakeReply}. */
export type FakeStreamReply = Extract<FakeReply, { kind: "stream" }>;

/** How a response ended. */
export type ResponseOutcome = "completed" | "client-disconnected" | "dropped";

/** One request as the server received it. */
export interface ReceivedRequest {
  /** 1-based arrival number. */
  seq: number;
  method: string;
  /** Path without the `/v1` prefix, e.g. `/chat/completions`. */
  path: string;
  headers: IncomingHttpHeaders;
  /** Parsed JSON body (`undefined` without a body). */
  body: unknown;
  /** Resolves when the response is over, saying how. */
  outcome: Promise<ResponseOutcome>;
  /** True once the client closed the connection before the response was complete. */
  clientDisconnected: boolean;
  /** How many chunks of a streamed reply were written. */
  chunksWritten: number;
  /** `performance.now()` when each chunk of a streamed reply was written (for latency benchmarks). */
  writtenAt: number[];
}

/** Options of {@link FakeOpenAIServer.start}. */
export interface FakeServerOptions {
  /** Serve HTTPS with this PEM key and certificate. */
  tls?: { key: string; cert: string };
}

/** Picks the reply for a request; `undefined` falls back to the queue (chat) or the default (models). */
export type FakeReplyHandler = (
  request: ReceivedRequest,
) => FakeReply | undefined | Promise<FakeReply | undefined>;

let chunkIds = 0;

/** A chat-completion chunk with one choice carrying `delta` (and `finish_reason`). */
export function chunk(
  delta: Record<string, unknown>,
  finishReason: string | null = null,
): Record<string, unknown> {
  return {
    id: `chatcmpl-fake-${chunkIds}`,
    object: "chat.completion.chunk",
    created: 1_700_000_000,
    model: "fake-model",
    choices: [{ index: 0, delta, finish_reason: finishReason, logprobs: null }],
  };
}

/** Builders for the chunk kinds servers send. */
export const chunks = {
  role: () => chunk({ role: "assistant", content: "" }),
  text: (content: string) => chunk({ content }),
  reasoning: (
    text: string,
    field: "reasoning_content" | "reasoning" | "reasoning_text" = "reasoning_content",
  ) => chunk({ [field]: text }),
  /** A tool-call fragment; only pass `id`/`name` on the first fragment of a call, as OpenAI does. */
  toolCall: (index: number, fragment: { id?: string; name?: string; arguments?: string }) => {
    const fn: Record<string, string> = {};
    if (fragment.name !== undefined) fn.name = fragment.name;
    if (fragment.arguments !== undefined) fn.arguments = fragment.arguments;
    const call: Record<string, unknown> = { index, function: fn };
    if (fragment.id !== undefined) {
      call.id = fragment.id;
      call.type = "function";
    }
    return chunk({ tool_calls: [call] });
  },
  finish: (reason: string | null) => chunk({}, reason),
  usage: (prompt: number, completion: number, cached = 0) => ({
    id: `chatcmpl-fake-${chunkIds}`,
    object: "chat.completion.chunk",
    created: 1_700_000_000,
    model: "fake-model",
    choices: [],
    usage: {
      prompt_tokens: prompt,
      completion_tokens: completion,
      total_tokens: prompt + completion,
      prompt_tokens_details: { cached_tokens: cached },
    },
  }),
};

/** Splits `text` into pieces of `size` characters. */
export function split(text: string, size: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out.length > 0 ? out : [""];
}

/** A streamed text answer: role chunk, the text in pieces, `finish_reason`, usage. */
export function textReply(
  text: string,
  options: { pieceSize?: number; usage?: [number, number] } = {},
): FakeStreamReply {
  chunkIds++;
  const [prompt, completion] = options.usage ?? [10, 5];
  return {
    kind: "stream",
    chunks: [
      chunks.role(),
      ...split(text, options.pieceSize ?? 4).map(chunks.text),
      chunks.finish("stop"),
      chunks.usage(prompt, completion),
    ],
  };
}

/** A tool call to stream: `arguments` is an object (serialized) or a raw JSON string. */
export interface FakeToolCall {
  id?: string;
  name: string;
  arguments: Record<string, unknown> | string;
}

/**
 * Streamed tool calls: each call's argument JSON is split into `fragmentSize`-character fragments; with
 * `interleave`, fragments of different calls alternate (as some servers stream parallel calls).
 */
export function toolCallReply(
  calls: FakeToolCall[],
  options: { text?: string; fragmentSize?: number; interleave?: boolean; finishReason?: string } = {},
): FakeStreamReply {
  chunkIds++;
  const out: FakeChunk[] = [chunks.role()];
  if (options.text) out.push(...split(options.text, 4).map(chunks.text));
  const perCall = calls.map((call, index) => {
    const json = typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments);
    const fragments = split(json, options.fragmentSize ?? 7);
    const first: { id?: string; name: string; arguments: string } = { name: call.name, arguments: "" };
    if (call.id !== undefined) first.id = call.id;
    return [
      chunks.toolCall(index, first),
      ...fragments.map((arguments_) => chunks.toolCall(index, { arguments: arguments_ })),
    ];
  });
  if (options.interleave) {
    const longest = Math.max(...perCall.map((list) => list.length));
    for (let i = 0; i < longest; i++) for (const list of perCall) if (list[i]) out.push(list[i] as FakeChunk);
  } else {
    for (const list of perCall) out.push(...list);
  }
  out.push(chunks.finish(options.finishReason ?? "tool_calls"), chunks.usage(20, 10));
  return { kind: "stream", chunks: out };
}

const payloadCache = new WeakMap<FakeChunk[], string[]>();

function ssePayloads(list: FakeChunk[]): string[] {
  let payloads = payloadCache.get(list);
  if (!payloads) {
    payloads = list.map((item) =>
      "raw" in item && typeof item.raw === "string"
        ? item.raw
        : "waitMs" in item
          ? ""
          : `data: ${JSON.stringify(item)}\n\n`,
    );
    payloadCache.set(list, payloads);
  }
  return payloads;
}

/**
 * A local server speaking the OpenAI chat-completions protocol over node:http on 127.0.0.1. Chat requests
 * are answered by `handler`, else by the next queued reply, else with a 500 naming the problem (so an
 * unscripted request fails the test). `GET /models` lists `models` unless `modelsReply` or the handler
 * says otherwise. Every request is recorded with its parsed body and headers.
 */
export class FakeOpenAIServer {
  readonly requests: ReceivedRequest[] = [];
  /** Served by `GET /models`. */
  models: string[] = ["fake-model"];
  /**
   * Extra fields of every `GET /models` entry, as servers that report the context window add them:
   * llama.cpp `{ meta: { n_ctx, n_ctx_train } }`, vLLM `{ max_model_len }`.
   */
  modelFields: Record<string, unknown> = {};
  /**
   * Close the connection right after each streamed response while its headers say `Connection:
   * keep-alive`, as llama.cpp's `llama-server` (cpp-httplib) does
   * (https://github.com/takeshy/obsidian-local-llm-hub/issues/32).
   */
  closeAfterStream = false;
  /** Replaces the `GET /models` answer. */
  modelsReply: FakeReply | undefined;
  /** Default pause before each streamed chunk (ms). */
  chunkDelayMs = 0;
  handler: FakeReplyHandler | undefined;
  /** TCP connections accepted so far (keep-alive reuse keeps this low). */
  connections = 0;
  private readonly queue: FakeReply[] = [];
  private readonly waiters: { count: number; resolve: () => void }[] = [];
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  private closed = false;

  private constructor(private readonly tls: FakeServerOptions["tls"]) {
    const handler = (req: IncomingMessage, res: ServerResponse) => void this.onRequest(req, res);
    this.server = tls ? createTlsServer(tls, handler) : createServer(handler);
    this.server.keepAliveTimeout = 30_000;
    this.server.on("connection", (socket) => {
      this.connections++;
      this.sockets.add(socket);
      socket.on("close", () => this.sockets.delete(socket));
    });
  }

  /** Starts a server on 127.0.0.1 with a free port (HTTPS when `tls` is given). */
  static async start(options: FakeServerOptions = {}): Promise<FakeOpenAIServer> {
    const fake = new FakeOpenAIServer(options.tls);
    await new Promise<void>((resolve) => fake.server.listen(0, "127.0.0.1", resolve));
    return fake;
  }

  /** `http://127.0.0.1:<port>/v1` (`https:` with TLS). */
  get baseURL(): string {
    const { port } = this.server.address() as AddressInfo;
    return `${this.tls ? "https" : "http"}://127.0.0.1:${port}/v1`;
  }

  /** Queues replies for the next chat requests, in order. */
  enqueue(...replies: FakeReply[]): void {
    this.queue.push(...replies);
  }

  /** Replies still queued. */
  get pending(): number {
    return this.queue.length;
  }

  /** Resolves once `count` requests (of any kind) have arrived. */
  waitForRequests(count: number): Promise<void> {
    if (this.requests.length >= count) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ count, resolve }));
  }

  /** Stops listening and destroys every open connection (hanging replies end). */
  async close(): Promise<void> {
    this.closed = true;
    const closing = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const socket of this.sockets) socket.destroy();
    await closing;
  }

  private async onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = await readBody(req);
    let resolveOutcome!: (outcome: ResponseOutcome) => void;
    const request: ReceivedRequest = {
      seq: this.requests.length + 1,
      method: req.method ?? "GET",
      path: (req.url ?? "/").replace(/^\/v1/, "").split("?")[0] ?? "/",
      headers: req.headers,
      body: raw === "" ? undefined : safeJson(raw),
      outcome: new Promise((resolve) => {
        resolveOutcome = resolve;
      }),
      clientDisconnected: false,
      chunksWritten: 0,
      writtenAt: [],
    };
    let dropped = false;
    res.on("close", () => {
      if (res.writableFinished) resolveOutcome("completed");
      else if (dropped) resolveOutcome("dropped");
      else {
        request.clientDisconnected = true;
        resolveOutcome("client-disconnected");
      }
    });
    this.requests.push(request);
    for (const waiter of this.waiters.filter((w) => this.requests.length >= w.count)) {
      this.waiters.splice(this.waiters.indexOf(waiter), 1);
      waiter.resolve();
    }
    const reply = await this.pickReply(request);
    await this.answer(reply, request, res, () => {
      dropped = true;
    });
  }

  private async pickReply(request: ReceivedRequest): Promise<FakeReply> {
    const handled = await this.handler?.(request);
    if (handled) return handled;
    if (request.method === "GET" && request.path === "/models") {
      return (
        this.modelsReply ?? {
          kind: "json",
          body: {
            object: "list",
            data: this.models.map((id) => ({
              id,
              object: "model",
              created: 0,
              owned_by: "fake",
              ...this.modelFields,
            })),
          },
        }
      );
    }
    if (request.path === "/chat/completions") {
      const next = this.queue.shift();
      if (next) return next;
    }
    return {
      kind: "error",
      status: 500,
      message: `fake server: no scripted reply for ${request.method} ${request.path} (request ${request.seq})`,
    };
  }

  private async answer(
    reply: FakeReply,
    request: ReceivedRequest,
    res: ServerResponse,
    markDropped: () => void,
  ) {
    switch (reply.kind) {
      case "drop":
        markDropped();
        res.socket?.destroy();
        return;
      case "hang":
        return;
      case "json":
        if (reply.delayMs) await this.sleep(reply.delayMs);
        res.writeHead(reply.status ?? 200, { "content-type": "application/json", ...reply.headers });
        res.end(JSON.stringify(reply.body));
        return;
      case "error": {
        const body = reply.body ?? {
          error: {
            message: reply.message ?? `error ${reply.status}`,
            type: "fake_error",
            code: reply.code ?? null,
          },
        };
        res.writeHead(reply.status, { "content-type": "application/json", ...reply.headers });
        res.end(typeof body === "string" ? body : JSON.stringify(body));
        return;
      }
      case "stream":
        await this.stream(reply, request, res, markDropped);
        return;
    }
  }

  private async stream(
    reply: Extract<FakeReply, { kind: "stream" }>,
    request: ReceivedRequest,
    res: ServerResponse,
    markDropped: () => void,
  ): Promise<void> {
    res.writeHead(200, {
      "content-type": "text/event-stream",
      "cache-control": "no-cache",
      ...(this.closeAfterStream ? { connection: "keep-alive", "keep-alive": "timeout=5, max=100" } : {}),
      ...reply.headers,
    });
    res.flushHeaders();
    const payloads = ssePayloads(reply.chunks);
    const delay = reply.delayMs ?? this.chunkDelayMs;
    for (const [index, payload] of payloads.entries()) {
      const item = reply.chunks[index];
      if (item && "waitMs" in item && typeof item.waitMs === "number") {
        await this.sleep(item.waitMs);
        continue;
      }
      if (reply.dropAfter !== undefined && request.chunksWritten >= reply.dropAfter) {
        markDropped();
        cut(res);
        return;
      }
      if (reply.hangAfter !== undefined && request.chunksWritten >= reply.hangAfter) return;
      if (reply.pause !== undefined && request.chunksWritten === reply.pause.before) await reply.pause.until;
      if (delay > 0) await this.sleep(delay);
      else if (reply.pacing === "immediate") await new Promise((resolve) => setImmediate(resolve));
      if (res.destroyed || this.closed) return;
      res.write(payload);
      request.chunksWritten++;
      request.writtenAt.push(performance.now());
    }
    if (reply.dropAfter !== undefined) {
      markDropped();
      cut(res);
      return;
    }
    if (reply.done !== false) res.write("data: [DONE]\n\n");
    res.end();
    if (this.closeAfterStream) res.socket?.end();
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => setTimeout(resolve, ms));
  }
}

/** Ends the connection mid-body: what was written still arrives, the chunked body never terminates. */
function cut(res: ServerResponse): void {
  const socket = res.socket;
  if (!socket) return;
  socket.end();
  setTimeout(() => socket.destroy(), 50).unref();
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    req.on("data", (part: Buffer) => parts.push(part));
    req.on("end", () => resolve(Buffer.concat(parts).toString("utf8")));
    req.on("error", reject);
  });
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
