import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { z } from "zod";
import {
  APPROVAL_DECISIONS,
  type ChatLogger,
  type ChatUser,
  type ReactionNames,
  type ReactionRole,
  type ReactionRoleName,
} from "../chat/index.js";
import { createHostAllowlist, type HostAllowlist } from "./allowed-hosts.js";
import type { PlaygroundActions } from "./api.js";
import type { LiveUpdates } from "./live.js";
import { PLAYGROUND_BOT } from "./outbound.js";
import { PlaygroundError, type PlaygroundStore } from "./store.js";

/** What the page needs to know about this bot (served as `GET /api/info`). */
export interface PlaygroundInfo {
  botName: string;
  /** The reaction vocabulary, by role (emoji names). */
  reactions: ReactionNames;
  /** The reaction table (meaning, who sets it, where the toolbar offers it), by role: the page's toolbar. */
  roles: Readonly<Record<ReactionRoleName, ReactionRole>>;
  /** Unicode for emoji names. */
  emoji: Readonly<Record<string, string>>;
  /** A setup problem the page shows as a banner (e.g. no model configured), or `null`. */
  notice: string | null;
}

/** Structured log sink of the playground: the one {@link ChatLogger} of every adapter. */
export type PlaygroundLogger = ChatLogger;

/** Options of {@link createPlaygroundServer}. */
export interface PlaygroundServerOptions {
  actions: PlaygroundActions;
  store: PlaygroundStore;
  live: LiveUpdates;
  info: PlaygroundInfo;
  log: PlaygroundLogger;
  /**
   * Host names the playground answers to besides `localhost`, `127.0.0.1` and `[::1]`: `name` (at the
   * port it listens on) or `name:port`. A request whose `Host` — or, for a changing request, whose
   * `Origin` — is not in the list gets a 403, whatever the bind address: it has no login, so this is what
   * keeps DNS-rebinding pages and other web sites out. Default none.
   */
  allowedHosts?: readonly string[];
}

const MAX_BODY_BYTES = 64 * 1024;
const ID = /^[A-Za-z0-9._:-]{1,128}$/;

const user = z.object({
  id: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,64}$/)
    .refine((id) => id !== PLAYGROUND_BOT.id, "that id belongs to the bot"),
  name: z.string().trim().min(1).max(40),
});
const text = z
  .string()
  .max(20_000)
  .refine((value) => value.trim() !== "", "is empty");
const bodies = {
  message: z.object({ user, text }),
  // `draftId`: the browser's id of what was typed, so a double submission posts once.
  post: z.object({
    user,
    text,
    draftId: z
      .string()
      .regex(/^[A-Za-z0-9-]{8,64}$/)
      .optional(),
  }),
  user: z.object({ user }),
  reaction: z.object({ user, emoji: z.string().regex(/^[a-z0-9_+'-]{1,64}$/), added: z.boolean() }),
  // The decisions every platform accepts; anything else is a 400, never a click.
  button: z.object({
    user,
    decision: z.enum(APPROVAL_DECISIONS),
    reason: z.string().max(500).optional(),
    // Edit and approve: the approver's arguments as typed (JSON text; validated by the gateway).
    editedArguments: z.string().max(20_000).optional(),
  }),
};

const STATIC_FILES: Record<string, string> = {
  "/": "index.html",
  "/static/app.js": "app.js",
  "/static/a11y.js": "a11y.js",
  "/static/markdown.js": "markdown.js",
  "/static/render.js": "render.js",
  "/static/style.css": "style.css",
  "/static/messages.css": "messages.css",
};
const CONTENT_TYPES: Record<string, string> = {
  html: "text/html; charset=utf-8",
  js: "text/javascript; charset=utf-8",
  css: "text/css; charset=utf-8",
};

/** Thrown for requests the API refuses; `status` is the HTTP status. */
class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The playground's HTTP server: the page (`/`, `/static/*`, plain files read once at creation), the
 * JSON API under `/api/` and the live event stream (`GET /api/events`). Changing requests must be JSON
 * (`content-type: application/json`) and, when the browser sends an `Origin`, come from the page's own
 * origin — so other web sites cannot post into the playground. Not listening yet: call `listen`.
 */
export function createPlaygroundServer(options: PlaygroundServerOptions): Server {
  const files = loadStaticFiles();
  const hosts = createHostAllowlist(options.allowedHosts);
  const route = createRouter(options, hosts);
  const refusedHosts = new Set<string>();
  return createServer((req, res) => {
    if (!hosts.allowsHost(req.headers.host, req.socket.localPort)) {
      const host = String(req.headers.host ?? "").slice(0, 100);
      // Tell the operator once per name (bounded): it is either an attack or a name to add.
      if (refusedHosts.size < 32 && !refusedHosts.has(host)) {
        refusedHosts.add(host);
        options.log.warn(
          { host },
          "playground: refused a request addressed to a host name it is not configured for; if people reach it under this name, add it to PLAYGROUND_ALLOWED_HOSTS",
        );
      }
      send(res, 403, {
        error: `the playground does not answer to "${host}"; open it at http://localhost:${req.socket.localPort ?? ""} or add this name to PLAYGROUND_ALLOWED_HOSTS`,
      });
      return;
    }
    let url: URL;
    try {
      url = new URL(req.url ?? "/", "http://playground.local");
    } catch {
      // Node's parser lets some targets through that are not URLs (`http://[/`): answer, never throw here.
      send(res, 400, { error: "malformed request URL" });
      return;
    }
    const file = req.method === "GET" ? STATIC_FILES[url.pathname] : undefined;
    if (file !== undefined) {
      const body = files.get(file)!;
      const type = CONTENT_TYPES[file.split(".").pop() ?? ""] ?? "application/octet-stream";
      res.writeHead(200, {
        "content-type": type,
        "cache-control": "no-cache",
        "x-content-type-options": "nosniff",
      });
      res.end(body);
      return;
    }
    if (req.method === "GET" && url.pathname === "/api/events") {
      options.live.attach(res, url.searchParams.get("user") ?? undefined);
      return;
    }
    route(req, url)
      .then((body) => send(res, 200, body ?? { ok: true }))
      .catch((err: unknown) => {
        if (err instanceof HttpError) return send(res, err.status, { error: err.message });
        if (err instanceof PlaygroundError) return send(res, errorStatus(err), { error: err.message });
        if (err instanceof z.ZodError) {
          const detail = err.issues.map((issue) => `${issue.path.join(".")} ${issue.message}`).join("; ");
          return send(res, 400, { error: `invalid request: ${detail}` });
        }
        options.log.error({ err, method: req.method, path: url.pathname }, "playground request failed");
        return send(res, 500, { error: "Something went wrong on the server; the details are in its log." });
      });
  });
}

type Handler = (req: IncomingMessage, params: string[]) => Promise<unknown>;

function createRouter(options: PlaygroundServerOptions, hosts: HostAllowlist) {
  const { actions, store, info } = options;
  const routes: [string, RegExp, Handler][] = [
    ["GET", /^\/api\/info$/, async () => info],
    ["GET", /^\/api\/threads$/, async () => ({ threads: await store.listThreads() })],
    [
      "POST",
      /^\/api\/threads$/,
      async (req) => {
        const body = bodies.post.parse(await readJson(req));
        return actions.createThread(toUser(body.user), body.text, body.draftId);
      },
    ],
    [
      "GET",
      /^\/api\/threads\/([^/]+)$/,
      async (_req, [threadId]) => {
        const snapshot = await store.snapshot(threadId!);
        if (!snapshot) throw new HttpError(404, "no such thread");
        return snapshot;
      },
    ],
    [
      "POST",
      /^\/api\/threads\/([^/]+)\/messages$/,
      async (req, [threadId]) => {
        const body = bodies.post.parse(await readJson(req));
        return { message: await actions.reply(threadId!, toUser(body.user), body.text, body.draftId) };
      },
    ],
    [
      "PATCH",
      /^\/api\/threads\/([^/]+)\/messages\/([^/]+)$/,
      async (req, [threadId, messageId]) => {
        const body = bodies.message.parse(await readJson(req));
        await actions.edit(threadId!, messageId!, toUser(body.user), body.text);
      },
    ],
    [
      "DELETE",
      /^\/api\/threads\/([^/]+)\/messages\/([^/]+)$/,
      async (req, [threadId, messageId]) => {
        const body = bodies.user.parse(await readJson(req));
        await actions.delete(threadId!, messageId!, toUser(body.user));
      },
    ],
    [
      "POST",
      /^\/api\/threads\/([^/]+)\/messages\/([^/]+)\/reactions$/,
      async (req, [threadId, messageId]) => {
        const body = bodies.reaction.parse(await readJson(req));
        await actions.react(threadId!, messageId!, toUser(body.user), body.emoji, body.added);
      },
    ],
    [
      "POST",
      /^\/api\/threads\/([^/]+)\/approvals\/([^/]+)$/,
      async (req, [threadId, approvalId]) => {
        const body = bodies.button.parse(await readJson(req));
        const { decision, reason, editedArguments } = body;
        const user = toUser(body.user);
        return {
          reply: await actions.click(threadId!, approvalId!, user, decision, reason, editedArguments),
        };
      },
    ],
    [
      "POST",
      /^\/api\/threads\/([^/]+)\/approvals\/([^/]+)\/form$/,
      async (req, [threadId, approvalId]) => {
        const body = bodies.user.parse(await readJson(req));
        return { form: await actions.approvalForm(threadId!, approvalId!, toUser(body.user)) };
      },
    ],
  ];
  return async (req: IncomingMessage, url: URL): Promise<unknown> => {
    const method = req.method ?? "GET";
    for (const [routeMethod, pattern, handler] of routes) {
      const match = pattern.exec(url.pathname);
      if (!match) continue;
      if (routeMethod !== method) continue;
      if (method !== "GET") checkOrigin(req, hosts);
      const params = match.slice(1).map(decodeId);
      return handler(req, params);
    }
    throw new HttpError(404, "not found");
  };
}

function decodeId(part: string): string {
  let id: string;
  try {
    id = decodeURIComponent(part);
  } catch {
    throw new HttpError(404, "not found");
  }
  if (!ID.test(id)) throw new HttpError(404, "not found");
  return id;
}

function toUser(parsed: { id: string; name: string }): ChatUser {
  return { id: parsed.id, name: parsed.name };
}

/**
 * Refuses cross-site requests: an `Origin` that is not an allowed host (`null` included: sandboxed frames
 * and privacy redirects send it), and bodies a plain HTML form could send. Requests without an `Origin`
 * (curl, scripts) pass; browsers always send one on these methods.
 */
function checkOrigin(req: IncomingMessage, hosts: HostAllowlist): void {
  const origin = req.headers.origin;
  if (origin !== undefined && !hosts.allowsOrigin(origin, req.socket.localPort))
    throw new HttpError(403, "cross-origin requests are not allowed");
  if (!(req.headers["content-type"] ?? "").startsWith("application/json"))
    throw new HttpError(415, "send JSON (content-type: application/json)");
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const part of req as AsyncIterable<Buffer>) {
    size += part.length;
    if (size > MAX_BODY_BYTES) throw new HttpError(413, "request body too large");
    parts.push(part);
  }
  try {
    return JSON.parse(Buffer.concat(parts).toString("utf8"));
  } catch {
    throw new HttpError(400, "the body is not JSON");
  }
}

function errorStatus(err: PlaygroundError): number {
  if (err.code === "empty_message") return 400;
  return err.code === "message_not_found" || err.code === "thread_not_found" ? 404 : 403;
}

function send(res: ServerResponse, status: number, body: unknown): void {
  if (res.headersSent) return;
  res.writeHead(status, { "content-type": "application/json; charset=utf-8", "cache-control": "no-store" });
  res.end(JSON.stringify(body));
}

function loadStaticFiles(): Map<string, Buffer> {
  const dir = new URL("./public/", import.meta.url);
  return new Map(Object.values(STATIC_FILES).map((name) => [name, readFileSync(new URL(name, dir))]));
}
