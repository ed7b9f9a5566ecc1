import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { createBullBoard } from "@bull-board/api";
import { BullMQAdapter } from "@bull-board/api/bullMQAdapter";
import { ExpressAdapter } from "@bull-board/express";
import { createRunQueue } from "../runs/index.js";
import { blockingConnection, type RedisTarget } from "./redis.js";

/** Where the dashboard is mounted on the ops server. */
export const DASHBOARD_PATH = "/dashboard";

/** Options of {@link createDashboard}. */
export interface DashboardOptions {
  /** The Redis the runs queue lives in (`REDIS_URL` or `REDIS_CLUSTER_NODES`). */
  redis: RedisTarget;
  /** `THREADLINE_PREFIX`: the queue is `runs` under BullMQ prefix `{<prefix>:bull}`, as the app's. */
  prefix: string;
  /** `DASHBOARD_PASSWORD`: when set, every request needs HTTP Basic auth with it (any user name). */
  password?: string;
  /**
   * `DASHBOARD_READ_ONLY` (default true): bull-board's read-only mode — no retry, remove, clean, pause or
   * add. Retrying or removing a run's job by hand can break the run invariants (one run per thread).
   */
  readOnly?: boolean;
}

/** The BullMQ dashboard (bull-board) of the runs queue, as a route of the ops server. */
export interface Dashboard {
  /** Answers `/dashboard` and everything under it; resolves false for other paths. Never rejects. */
  route(req: IncomingMessage, res: ServerResponse): Promise<boolean>;
  /** Where it is mounted ({@link DASHBOARD_PATH}). */
  readonly path: string;
  /** True when requests need the password. */
  readonly protected: boolean;
  /** Closes the dashboard's queue and Redis connection. Idempotent. */
  close(): Promise<void>;
}

/** The connect-style handler the express adapter's router is (bull-board types it `any`). */
type ConnectHandler = (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => void;

/**
 * Builds bull-board (`@bull-board/api` + `@bull-board/express`) for the runs queue, mounted at
 * {@link DASHBOARD_PATH}: the page, its static assets and its JSON API under `/dashboard/api/`. On the first
 * request it opens one Redis connection (BullMQ's settings) for its own `Queue`; close it with `close`.
 */
export function createDashboard(options: DashboardOptions): Dashboard {
  // The queue, its connection and bull-board are built on the first request: most processes are never
  // asked, and a queue closed while it is still connecting leaves a rejected command behind.
  let board: { router: ConnectHandler; close(): Promise<void> } | undefined;
  const open = () => {
    if (board) return board;
    const connection = blockingConnection(options.redis);
    const queue = createRunQueue(connection, options.prefix);
    const adapter = new ExpressAdapter().setBasePath(DASHBOARD_PATH);
    createBullBoard({
      queues: [
        new BullMQAdapter(queue, {
          readOnlyMode: options.readOnly ?? true,
          description: "Threadline runs: one job per run of a thread",
        }),
      ],
      serverAdapter: adapter,
      options: { uiConfig: { boardTitle: "Threadline runs" } },
    });
    const router = adapter.getRouter() as ConnectHandler & { disable(setting: string): void };
    router.disable("x-powered-by");
    board = {
      router,
      close: () => queue.close().finally(() => connection.disconnect()),
    };
    return board;
  };
  const password = options.password;
  let closed: Promise<void> | undefined;
  return {
    path: DASHBOARD_PATH,
    protected: password !== undefined,
    async route(req, res) {
      const url = req.url ?? "/";
      const path = url.split("?")[0] ?? "/";
      if (path !== DASHBOARD_PATH && !path.startsWith(`${DASHBOARD_PATH}/`)) return false;
      if (password !== undefined && !passwordMatches(req.headers.authorization, password)) {
        res.writeHead(401, {
          "www-authenticate": 'Basic realm="Threadline dashboard", charset="UTF-8"',
          "content-type": "text/plain",
        });
        res.end("authentication required");
        return true;
      }
      if (crossSite(req)) {
        res.writeHead(403, { "content-type": "text/plain" });
        res.end("cross-origin requests are not allowed");
        return true;
      }
      if (closed) {
        res.writeHead(503, { "content-type": "text/plain" });
        res.end("shutting down");
        return true;
      }
      return serve(open().router, req, res, url);
    },
    close() {
      closed ??= board ? board.close() : Promise.resolve();
      return closed;
    },
  };
}

/** Hands the request to bull-board's express app with the mount path stripped, as `app.use` would. */
function serve(
  router: ConnectHandler,
  req: IncomingMessage,
  res: ServerResponse,
  url: string,
): Promise<boolean> {
  const rest = url.slice(DASHBOARD_PATH.length);
  req.url = rest.startsWith("/") ? rest : `/${rest}`;
  return new Promise((resolve) => {
    res.once("finish", () => resolve(true));
    res.once("close", () => resolve(true));
    router(req, res, (err) => {
      if (res.headersSent) return resolve(true);
      res.writeHead(err === undefined ? 404 : 500, { "content-type": "text/plain" });
      res.end(err === undefined ? "not found" : "dashboard error");
      resolve(true);
    });
  });
}

/** HTTP Basic credentials carrying `password` (any user name); compared in constant time. */
function passwordMatches(header: string | undefined, password: string): boolean {
  const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header ?? "");
  if (!match) return false;
  const decoded = Buffer.from(match[1] ?? "", "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  if (colon < 0) return false;
  // Hashing first gives equal lengths, so the comparison time says nothing about the password.
  return timingSafeEqual(sha256(decoded.slice(colon + 1)), sha256(password));
}

function sha256(text: string): Buffer {
  return createHash("sha256").update(text, "utf8").digest();
}

/** A changing request sent by another web site (the browser adds the Basic credentials by itself). */
function crossSite(req: IncomingMessage): boolean {
  if (req.method === "GET" || req.method === "HEAD") return false;
  const origin = req.headers.origin;
  if (origin === undefined) return false;
  try {
    return new URL(origin).host !== req.headers.host;
  } catch {
    return true;
  }
}
