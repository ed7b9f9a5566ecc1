import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Metrics } from "./metrics.js";

/** A readiness probe: resolves true when the process can do its work (e.g. Redis answers). */
export type HealthCheck = () => Promise<boolean>;

/** Handles `/healthz` and `/metrics`; returns false for other paths (so it can share a server). */
export function createOpsHandler(metrics: Metrics, healthy: HealthCheck) {
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
    return false;
  };
}

/** A standalone ops server (workers; gateways without the playground). */
export async function startOpsServer(port: number, metrics: Metrics, healthy: HealthCheck): Promise<Server> {
  const handle = createOpsHandler(metrics, healthy);
  const server = createServer((req, res) => {
    void handle(req, res).then((handled) => {
      if (!handled) {
        res.writeHead(404, { "content-type": "text/plain" });
        res.end("not found");
      }
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, () => resolve());
  });
  return server;
}
