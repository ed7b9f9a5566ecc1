/**
 * The playground has no login, so it answers only to the host names it is configured for: the `Host`
 * header (which defeats DNS rebinding, whatever interface the server is bound to) and the `Origin` of a
 * changing request (which keeps other web sites from posting into it) are both checked against the same
 * list — never the Origin against the Host header, which a rebinding page controls.
 */

/** Names the playground always answers to, at the port it listens on. */
export const LOOPBACK_HOSTS: readonly string[] = ["localhost", "127.0.0.1", "[::1]"];

/** `name` or `name:port`; IPv6 literals in brackets. */
const AUTHORITY = /^(\[[0-9a-f:.]+\]|[a-z0-9](?:[a-z0-9.-]{0,251}[a-z0-9])?)(?::(\d{1,5}))?$/;

interface AllowedHost {
  name: string;
  /** `undefined`: the port the playground listens on. */
  port: number | undefined;
}

/** Parses a `name[:port]` allowlist entry; `undefined` when it is not one. */
export function parseAllowedHost(entry: string): AllowedHost | undefined {
  const match = AUTHORITY.exec(entry.trim().toLowerCase());
  if (!match) return undefined;
  const port = match[2] === undefined ? undefined : Number(match[2]);
  if (port !== undefined && (port < 1 || port > 65535)) return undefined;
  return { name: match[1]!, port };
}

/** A checker built by {@link createHostAllowlist}. */
export interface HostAllowlist {
  /** True when a `Host` header names an allowed host; `localPort` is the port the request came in on. */
  allowsHost(host: string | undefined, localPort: number | undefined): boolean;
  /** True when an `Origin` header (`http(s)://name[:port]`) names an allowed host. `null` is refused. */
  allowsOrigin(origin: string, localPort: number | undefined): boolean;
}

/**
 * The allowlist of {@link LOOPBACK_HOSTS} plus `extra` entries (`name` = that name at the playground's
 * port; `name:port` = exactly that, e.g. a published port that differs, or `bot.example.com:443` behind a
 * TLS proxy). A `Host` without a port (a proxy or port forward on 80/443 in front) matches the entry's name
 * when the entry has no port or port 80/443; an `Origin` always has a port (explicit, or its scheme's).
 * @throws Error when an entry is not `name[:port]` (the environment is validated before this).
 */
export function createHostAllowlist(extra: readonly string[] = []): HostAllowlist {
  const entries = [...LOOPBACK_HOSTS, ...extra].map((entry) => {
    const parsed = parseAllowedHost(entry);
    if (!parsed) throw new Error(`playground: "${entry}" is not a host name or host:port`);
    return parsed;
  });
  const allows = (name: string, ports: readonly number[], localPort: number | undefined) =>
    entries.some((entry) => entry.name === name && ports.includes(entry.port ?? localPort ?? -1));
  return {
    allowsHost(host, localPort) {
      const parsed = host === undefined ? undefined : parseAllowedHost(host);
      if (!parsed) return false;
      if (parsed.port !== undefined) return allows(parsed.name, [parsed.port], localPort);
      // No port: a proxy or port forward on 80/443 in front. The name is what rebinding changes.
      return entries.some(
        (entry) => entry.name === parsed.name && (entry.port === undefined || [80, 443].includes(entry.port)),
      );
    },
    allowsOrigin(origin, localPort) {
      let url: URL;
      try {
        url = new URL(origin);
      } catch {
        return false;
      }
      if (url.protocol !== "http:" && url.protocol !== "https:") return false;
      const port = url.port === "" ? (url.protocol === "https:" ? 443 : 80) : Number(url.port);
      return allows(url.hostname.toLowerCase(), [port], localPort);
    },
  };
}
