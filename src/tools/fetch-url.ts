import { request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import type { Readable } from "node:stream";
import { createBrotliDecompress, createGunzip, createInflate } from "node:zlib";
import { z } from "zod";
import { approvalPolicySchemaFor } from "./approval-policy.js";
import { type AnyToolDefinition, defineTool, ToolError } from "./define-tool.js";
import { htmlToMarkdown } from "./html-to-markdown.js";
import { type NetGuardOptions, netGuardSettingsSchema, pinPublicTarget } from "./net-guard.js";
import { textSetting, wholeNumberSetting } from "./setting-schemas.js";

/** The settings of the `fetch_url` tool an operator sets (`builtinTools.fetchUrl` in the config module). */
export const fetchUrlSettingsSchema = netGuardSettingsSchema.extend({
  /** Largest body read (after decompression); the rest is cut off. Default 2 MiB. */
  maxBytes: wholeNumberSetting("2097152").optional(),
  /** Most characters returned to the model. Default 40 000. */
  maxChars: wholeNumberSetting("40000").optional(),
  /** Whole-request time limit, redirects included. Default 20 000 ms. */
  timeoutMs: wholeNumberSetting("20000").optional(),
  /** Redirects followed (each one checked like the first request). Default 5. */
  maxRedirects: z
    .number({ error: "must be a number, for example 5" })
    .int({ error: "must be a whole number, for example 5" })
    .min(0, { error: "must be 0 (no redirects) or more, for example 5" })
    .optional(),
  /** Default `Threadline/0.1 (+fetch_url)`. */
  userAgent: textSetting('"MyBot/1.0"').optional(),
  /** Default `"never"`. */
  approval: approvalPolicySchemaFor<{ url: string }>().optional(),
});

/** See {@link fetchUrlSettingsSchema}. */
export type FetchUrlSettings = z.infer<typeof fetchUrlSettingsSchema>;

/** Options of the `fetch_url` tool: its settings, and what only code passes (a DNS resolver). */
export interface FetchUrlOptions extends FetchUrlSettings, NetGuardOptions {}

/** A fetched response body, before conversion. */
export interface FetchedBody {
  url: string;
  status: number;
  statusText: string;
  contentType: string;
  body: Buffer;
  /** True when the body was longer than `maxBytes` and was cut. */
  truncated: boolean;
}

const TEXT_TYPES =
  /^(text\/|application\/(json|xml|xhtml\+xml|javascript|x-javascript|ecmascript|x-yaml|yaml|toml|x-ndjson|ld\+json|rss\+xml|atom\+xml|csv)|[^;]*\+(json|xml))/i;

function decoderFor(encoding: string | undefined, stream: Readable): Readable {
  switch ((encoding ?? "").trim().toLowerCase()) {
    case "gzip":
    case "x-gzip":
      return stream.pipe(createGunzip());
    case "deflate":
      return stream.pipe(createInflate());
    case "br":
      return stream.pipe(createBrotliDecompress());
    default:
      return stream;
  }
}

async function readCapped(
  response: IncomingMessage,
  maxBytes: number,
): Promise<{ body: Buffer; truncated: boolean }> {
  const chunks: Buffer[] = [];
  let size = 0;
  const stream = decoderFor(response.headers["content-encoding"], response);
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      if (size + chunk.length > maxBytes) {
        chunks.push(chunk.subarray(0, maxBytes - size));
        return { body: Buffer.concat(chunks), truncated: true };
      }
      chunks.push(chunk);
      size += chunk.length;
    }
  } finally {
    response.destroy();
    if (stream !== response) stream.destroy();
  }
  return { body: Buffer.concat(chunks), truncated: false };
}

function send(
  url: URL,
  options: FetchUrlOptions,
  signal: AbortSignal,
  pin: Awaited<ReturnType<typeof pinPublicTarget>>,
) {
  const request = url.protocol === "https:" ? httpsRequest : httpRequest;
  return new Promise<IncomingMessage>((resolve, reject) => {
    const req = request(url, {
      method: "GET",
      // A fresh connection per hop: a pooled socket could belong to another (unchecked) address.
      agent: false,
      lookup: pin.lookup as never,
      signal,
      headers: {
        "user-agent": options.userAgent ?? "Threadline/0.1 (+fetch_url)",
        accept: "text/html,application/xhtml+xml,text/plain,text/markdown,application/json;q=0.9,*/*;q=0.5",
        "accept-encoding": "gzip, deflate, br",
      },
    });
    req.once("response", resolve);
    req.once("error", reject);
    req.end();
  });
}

/**
 * GETs a URL through the SSRF guard: every hop (the first request and each redirect) is resolved and
 * checked, and its connection pinned to the checked address. @throws ToolError with a readable reason.
 */
export async function fetchGuarded(
  rawUrl: string,
  options: FetchUrlOptions,
  outer?: AbortSignal,
): Promise<FetchedBody> {
  let url: URL;
  try {
    url = new URL(rawUrl);
  } catch {
    throw new ToolError(
      `"${rawUrl}" is not a valid URL; give a full address such as https://example.com/page.`,
    );
  }
  const timeoutMs = options.timeoutMs ?? 20_000;
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  const onOuterAbort = () => controller.abort();
  outer?.addEventListener("abort", onOuterAbort, { once: true });
  if (outer?.aborted) controller.abort();
  try {
    for (let hop = 0; ; hop++) {
      const pin = await pinPublicTarget(url, options);
      if (controller.signal.aborted) throw new Error("aborted");
      const response = await send(url, options, controller.signal, pin);
      const status = response.statusCode ?? 0;
      const location = response.headers.location;
      if (status >= 300 && status < 400 && location) {
        response.destroy();
        if (hop >= (options.maxRedirects ?? 5)) throw new ToolError(`Too many redirects fetching ${rawUrl}.`);
        url = new URL(location, url);
        continue;
      }
      const { body, truncated } = await readCapped(response, options.maxBytes ?? 2 * 1024 * 1024);
      return {
        url: url.href,
        status,
        statusText: response.statusMessage ?? "",
        contentType: String(response.headers["content-type"] ?? ""),
        body,
        truncated,
      };
    }
  } catch (err) {
    if (err instanceof ToolError) throw err;
    if (outer?.aborted) throw err;
    if (controller.signal.aborted)
      throw new ToolError(
        `Fetching ${url.href} took longer than ${timeoutMs < 1000 ? `${timeoutMs} ms` : `${Math.round(timeoutMs / 1000)} s`} and was stopped.`,
      );
    const code = (err as NodeJS.ErrnoException).code;
    throw new ToolError(`Could not fetch ${url.href}: ${code ?? (err as Error).message}.`);
  } finally {
    clearTimeout(timer);
    outer?.removeEventListener("abort", onOuterAbort);
  }
}

function charsetOf(contentType: string, body: Buffer): string {
  const declared = /charset\s*=\s*"?([\w.:-]+)/i.exec(contentType)?.[1];
  if (declared) return declared;
  const meta = /<meta[^>]+charset\s*=\s*["']?([\w.:-]+)/i.exec(body.subarray(0, 2048).toString("latin1"));
  return meta?.[1] ?? "utf-8";
}

function decode(body: Buffer, charset: string): string {
  try {
    return new TextDecoder(charset).decode(body);
  } catch {
    return new TextDecoder("utf-8").decode(body);
  }
}

/** Turns a fetched body into what the model reads: Markdown for pages, text for text, a refusal otherwise. */
export function readableText(fetched: FetchedBody): { title?: string; text: string } {
  const type = fetched.contentType.split(";")[0]!.trim().toLowerCase();
  const sniffHtml =
    type === "" && /^\s*(<!doctype html|<html)/i.test(fetched.body.subarray(0, 512).toString("latin1"));
  const isHtml = type === "text/html" || type === "application/xhtml+xml" || sniffHtml;
  if (!isHtml && type !== "" && !TEXT_TYPES.test(type))
    throw new ToolError(
      `${fetched.url} is ${type} (${fetched.body.length}${fetched.truncated ? "+" : ""} bytes), not text; fetch_url reads web pages and text only.`,
    );
  const text = decode(fetched.body, charsetOf(fetched.contentType, fetched.body));
  if (!isHtml && type === "" && text.includes("\u0000"))
    throw new ToolError(
      `${fetched.url} returned binary data without a content type; it cannot be read as text.`,
    );
  if (isHtml) {
    const page = htmlToMarkdown(text);
    return page.title ? { title: page.title, text: page.markdown } : { text: page.markdown };
  }
  if (/json/.test(type) && !fetched.truncated) {
    try {
      return { text: JSON.stringify(JSON.parse(text), null, 2) };
    } catch {
      // Not valid JSON after all: show it as it is.
    }
  }
  return { text };
}

/** `fetch_url`: GETs a public web page or text document and returns it as readable text / Markdown. */
export function fetchUrlTool(options: FetchUrlOptions = {}): AnyToolDefinition {
  const maxChars = options.maxChars ?? 40_000;
  return defineTool({
    name: "fetch_url",
    description:
      "Fetch a public web page or text document (http/https GET) and return its readable content as Markdown or text. Private, local and cloud-metadata addresses are refused.",
    parameters: z.object({ url: z.string().describe("The full URL, e.g. https://example.com/docs") }),
    approval: options.approval ?? "never",
    // A read: a steer or interrupt that arrives while a slow page loads stops the wait.
    interruptible: true,
    async execute({ url }, ctx) {
      ctx.onUpdate(`fetching ${url}`);
      const fetched = await fetchGuarded(url, options, ctx.signal);
      if (fetched.status >= 400) {
        const snippet = decode(fetched.body.subarray(0, 500), "utf-8").replace(/\s+/g, " ").trim();
        throw new ToolError(
          `GET ${fetched.url} answered ${fetched.status} ${fetched.statusText}.${snippet ? ` Body: ${snippet}` : ""}`,
        );
      }
      const { title, text } = readableText(fetched);
      let content = text;
      const notes: string[] = [];
      if (fetched.truncated)
        notes.push(`the document was longer than ${options.maxBytes ?? 2 * 1024 * 1024} bytes and was cut`);
      if (content.length > maxChars) {
        notes.push(`${content.length - maxChars} more characters were left out`);
        content = content.slice(0, maxChars);
      }
      const header = [title ? `# ${title}` : undefined, `URL: ${fetched.url}`].filter(Boolean).join("\n");
      const footer = notes.length > 0 ? `\n\n[${notes.join("; ")}]` : "";
      return {
        content: [{ type: "text", text: `${header}\n\n${content}${footer}` }],
        details: {
          url: fetched.url,
          status: fetched.status,
          contentType: fetched.contentType,
          bytes: fetched.body.length,
        },
      };
    },
  });
}
