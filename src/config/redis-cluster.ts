import { z } from "zod";

/** One seed node of a Redis Cluster. */
export interface RedisClusterNode {
  host: string;
  port: number;
}

/**
 * `REDIS_CLUSTER_NODES`, parsed: the seed nodes a cluster client starts from (it discovers the others
 * with `CLUSTER SLOTS`), and the one set of credentials and TLS every node of the cluster shares.
 */
export interface RedisClusterSeeds {
  nodes: RedisClusterNode[];
  username?: string;
  password?: string;
  /** `rediss://` seeds: every node connection uses TLS. */
  tls: boolean;
}

const EXAMPLE = "10.0.0.1:6379,10.0.0.2:6379 or rediss://default:secret@node-1.example.com:6379";

/**
 * `host:port` items or `redis://` / `rediss://` URLs, comma-separated; empty or unset = no cluster. URL items
 * carry the credentials and TLS of the whole cluster (bare `host:port` items inherit them), so the URL
 * items must agree; a cluster has only database 0.
 */
export const redisClusterNodes = z
  .string()
  .optional()
  .transform((value, ctx): RedisClusterSeeds | undefined => {
    const items = (value ?? "")
      .split(",")
      .map((item) => item.trim())
      .filter((item) => item !== "");
    if (items.length === 0) return undefined;
    const nodes: RedisClusterNode[] = [];
    const shared = new Set<string>();
    let seeds: RedisClusterSeeds = { nodes, tls: false };
    for (const item of items) {
      const parsed = parseItem(item);
      if (typeof parsed === "string") {
        ctx.addIssue({ code: "custom", message: parsed });
        return undefined;
      }
      nodes.push(parsed.node);
      if (parsed.settings) {
        shared.add(JSON.stringify(parsed.settings));
        seeds = { ...parsed.settings, nodes };
      }
    }
    if (shared.size > 1) {
      ctx.addIssue({
        code: "custom",
        message:
          "has URLs with different schemes or credentials: a cluster has one password and one TLS setting (give them once; host:port items inherit them)",
      });
      return undefined;
    }
    return seeds;
  });

/** A node and, for a URL item, the credentials and TLS it carries; or what is wrong with it. */
function parseItem(
  item: string,
): { node: RedisClusterNode; settings?: Omit<RedisClusterSeeds, "nodes"> } | string {
  const isUrl = item.includes("://");
  let url: URL;
  try {
    url = new URL(isUrl ? item : `redis://${item}`);
  } catch {
    return `must be host:port items or redis:// URLs separated by commas, for example ${EXAMPLE}`;
  }
  if (url.protocol !== "redis:" && url.protocol !== "rediss:") {
    return `must use redis:// or rediss:// (TLS) URLs, for example ${EXAMPLE}`;
  }
  if (url.hostname === "" || url.search !== "" || url.hash !== "") {
    return `must be host:port items or redis:// URLs separated by commas, for example ${EXAMPLE}`;
  }
  if (url.pathname !== "" && url.pathname !== "/" && url.pathname !== "/0") {
    return "must not select a database: a Redis Cluster has only database 0";
  }
  const node = {
    host: url.hostname.replace(/^\[(.*)\]$/, "$1"),
    port: url.port === "" ? 6379 : Number(url.port),
  };
  if (!isUrl) return { node };
  const settings: Omit<RedisClusterSeeds, "nodes"> = { tls: url.protocol === "rediss:" };
  if (url.username !== "") settings.username = decodeURIComponent(url.username);
  if (url.password !== "") settings.password = decodeURIComponent(url.password);
  return { node, settings };
}
