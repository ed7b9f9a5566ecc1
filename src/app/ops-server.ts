import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import ipaddr from "ipaddr.js";
import type { Env } from "../config/index.js";
import type { RunLogger } from "../runs/index.js";
import type { Dashboard } from "./dashboard.js";
import type { Metrics } from "./metrics.js";
import { redisTarget } from "./redis.js";

/** A readiness probe: resolves true when the process can do its work (e.g. Redis answers). */
export type HealthCheck = () => Promise<boolean>;

/** An extra path handler of the ops server; resolves true when it answered the request. */
export type OpsRoute = (req: IncomingMessage, res: ServerResponse) => Promise<boolean>;

/**
 * Handles `/healthz` and `/metrics`, then asks `routes` in order (e.g. the dashboard); resolves false for
 * other paths (so it can share a server).
 */
export function createOpsHandler(metrics: Metrics, healthy: HealthCheck, routes: readonly OpsRoute[] = []) {
  return async (req: IncomingMessage, res: ServerResponse): Promise<boolean> => {
    const path = (req.url ?? "/").split("?")[0];
    if (path === "/healthz") {
      const ok = await healthy().catch(() => false);
      res.writeHead(ok ? 200 : 503, { "content-type": "application/json" });
      res.end(JSON.stringify({ status: ok ? "ok" : "unavailable" }));
      return true;
    }
    if (path === "/metrics") {
      const { contentType, body } = await metrics.render();
      res.writeHead(200, { "content-type": contentType });
      res.end(body);
      return true;
    }
    for (const route of routes) if (await route(req, res)) return true;
    return false;
  };
}

/** Options of {@link startOpsServer}. */
export interface OpsServerOptions {
  /** More paths to serve (the dashboard). */
  routes?: readonly OpsRoute[];
  /** Interface to bind. Default: every interface (as `server.listen(port)`). */
  host?: string;
}

/** A standalone ops server (workers; gateways without the playground). */
export async function startOpsServer(
  port: number,
  metrics: Metrics,
  healthy: HealthCheck,
  options: OpsServerOptions = {},
): Promise<Server> {
  const handle = createOpsHandler(metrics, healthy, options.routes);
  const server = createServer((req, res) => {
    void handle(req, res)
      .catch(() => false)
      .then((handled) => {
        if (handled || res.headersSent) return;
        res.writeHead(404, { "content-type": "text/plain" });
        res.end("not found");
      });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    const listening = () => {
      server.off("error", reject);
      resolve();
    };
    if (options.host === undefined) server.listen(port, listening);
    else server.listen(port, options.host, listening);
  });
  return server;
}

/** True when the server listens on an address other machines can reach (not only loopback). */
export function listensBeyondLoopback(server: Server): boolean {
  const address = server.address() as AddressInfo | null;
  if (!address) return false;
  try {
    const ip = ipaddr.process(address.address);
    return ip.range() !== "loopback";
  } catch {
    return true;
  }
}

/** Options of {@link serveOps}. */
export interface ServeOpsOptions {
  env: Env;
  metrics: Metrics;
  healthy: HealthCheck;
  log: RunLogger;
  /** This process may serve the dashboard (gateway and `start`); it does when `DASHBOARD` is on. */
  withDashboard: boolean;
  /** Port to listen on. Default `OPS_PORT` (`0` picks a free one, for tests). */
  port?: number;
  /** Interface to bind. Default: every interface. */
  host?: string;
}

/** The ops server of a process. */
export interface OpsService {
  server: Server;
  /** The dashboard when it is served, else `undefined`. */
  dashboard: Dashboard | undefined;
  /** Closes the server, then the dashboard's queue and connection. */
  close(): Promise<void>;
}

/**
 * Serves `/healthz`, `/metrics` and — with `DASHBOARD` on and `withDashboard` — the runs dashboard at
 * `/dashboard`. Warns when the dashboard has no password while reachable from other machines.
 * @throws when the port cannot be bound (nothing stays open then).
 */
export async function serveOps(options: ServeOpsOptions): Promise<OpsService> {
  const { env, log } = options;
  // bull-board (with express) is loaded only when the dashboard is on: it takes a while to load.
  const dashboard =
    env.DASHBOARD && options.withDashboard
      ? (await import("./dashboard.js")).createDashboard({
          redis: redisTarget(env),
          prefix: env.THREADLINE_PREFIX,
          readOnly: env.DASHBOARD_READ_ONLY,
          ...(env.DASHBOARD_PASSWORD === undefined ? {} : { password: env.DASHBOARD_PASSWORD }),
        })
      : undefined;
  const serverOptions: OpsServerOptions = dashboard ? { routes: [dashboard.route] } : {};
  if (options.host !== undefined) serverOptions.host = options.host;
  let server: Server;
  try {
    server = await startOpsServer(
      options.port ?? env.OPS_PORT,
      options.metrics,
      options.healthy,
      serverOptions,
    );
  } catch (err) {
    await dashboard?.close();
    throw err;
  }
  const { port } = server.address() as AddressInfo;
  log.info(
    { port },
    dashboard ? "serving /healthz, /metrics and /dashboard" : "serving /healthz and /metrics",
  );
  if (dashboard) {
    log.info({ port, path: dashboard.path, readOnly: env.DASHBOARD_READ_ONLY }, "runs dashboard enabled");
    if (!dashboard.protected && listensBeyondLoopback(server))
      log.warn(
        { port, path: dashboard.path },
        "the runs dashboard has no password and the ops server is reachable from other machines: set DASHBOARD_PASSWORD, or keep OPS_PORT private",
      );
  }
  return {
    server,
    dashboard,
    async close() {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await dashboard?.close();
    },
  };
}
