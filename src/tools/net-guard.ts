import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { isIP } from "node:net";
import ipaddr from "ipaddr.js";
import { z } from "zod";
import { ToolError } from "./define-tool.js";
import { textListSetting } from "./setting-schemas.js";

/** One resolved address. */
export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to every address it has. Tests inject one to simulate DNS answers. */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

/** The operating system's resolver (`dns.lookup` with all addresses), what connections would use. */
export const systemResolver: Resolver = (hostname) =>
  new Promise((resolve, reject) => {
    dnsLookup(hostname, { all: true, verbatim: true }, (err, addresses: LookupAddress[]) => {
      if (err) reject(err);
      else resolve(addresses.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 })));
    });
  });

/**
 * Why an address must not be fetched, or `undefined` for a public unicast address. Everything that is not
 * plain public unicast is refused: loopback, RFC 1918 private, link-local (including the cloud metadata
 * address 169.254.169.254), carrier-grade NAT, unique-local and site-local IPv6, multicast, broadcast,
 * unspecified, documentation/benchmark/reserved ranges, and IPv6 forms that embed an IPv4 address
 * (mapped, compatible, NAT64, 6to4, Teredo), whose IPv4 part could be private.
 */
export function nonPublicReason(address: string): string | undefined {
  if (!ipaddr.isValid(address)) return "not an IP address";
  const parsed = ipaddr.process(address); // IPv4-mapped IPv6 becomes IPv4
  if (parsed.kind() === "ipv6") {
    const parts = (parsed as ipaddr.IPv6).parts;
    // ::/96 (IPv4-compatible, loopback, unspecified) has no public meaning.
    if (parts.slice(0, 6).every((part) => part === 0)) return "a reserved IPv6 address";
  }
  const range = parsed.range();
  return range === "unicast" ? undefined : `a ${describeRange(range)} address`;
}

function describeRange(range: string): string {
  switch (range) {
    case "loopback":
      return "loopback";
    case "private":
    case "uniqueLocal":
      return "private network";
    case "linkLocal":
      return "link-local (cloud metadata)";
    case "carrierGradeNat":
      return "carrier-grade NAT";
    default:
      return `non-public (${range})`;
  }
}

/** The SSRF settings of the URL fetcher an operator sets (`builtinTools.fetchUrl` in the config module). */
export const netGuardSettingsSchema = z.strictObject({
  /**
   * Hosts fetched even when they resolve to non-public addresses (an explicit opt-in, e.g. an intranet
   * wiki or a test server): `"wiki.internal"`, `"127.0.0.1"` or with a port, `"127.0.0.1:8080"`. Matched
   * against the URL's host name, never against what a name resolves to.
   */
  allowHosts: textListSetting('["wiki.internal"]').optional(),
});

/** SSRF settings of the URL fetcher: {@link netGuardSettingsSchema}'s, and what only code passes. */
export interface NetGuardOptions extends z.infer<typeof netGuardSettingsSchema> {
  /** Default {@link systemResolver}. */
  resolve?: Resolver;
}

/** Where a request will connect, checked. Pass `lookup` to the request so it connects exactly there. */
export interface PinnedTarget {
  address: string;
  family: 4 | 6;
  lookup: (
    hostname: string,
    options: { all?: boolean },
    callback: (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void,
  ) => void;
}

function bareHost(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, "$1").toLowerCase();
}

function isAllowed(url: URL, allowHosts: readonly string[]): boolean {
  const host = bareHost(url);
  const port = url.port || (url.protocol === "https:" ? "443" : "80");
  return allowHosts.some((entry) => {
    const wanted = entry.toLowerCase().replace(/^\[(.*)\](:\d+)?$/, "$1$2");
    return wanted === host || wanted === `${host}:${port}`;
  });
}

/**
 * Resolves the URL's host, refuses it unless every address is public (or the host is allow-listed), and
 * returns a `lookup` that pins the connection to the checked address, so a second DNS answer (rebinding)
 * can never be used. Call it again for every redirect. @throws ToolError naming the reason.
 */
export async function pinPublicTarget(url: URL, options: NetGuardOptions = {}): Promise<PinnedTarget> {
  if (url.protocol !== "http:" && url.protocol !== "https:")
    throw new ToolError(`Only http and https URLs can be fetched, not ${url.protocol.replace(":", "")}.`);
  const host = bareHost(url);
  const allowed = isAllowed(url, options.allowHosts ?? []);
  let addresses: ResolvedAddress[];
  if (isIP(host)) {
    addresses = [{ address: host, family: isIP(host) === 6 ? 6 : 4 }];
  } else {
    try {
      addresses = await (options.resolve ?? systemResolver)(host);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? "lookup failed";
      throw new ToolError(`Could not resolve ${host} (${code}).`);
    }
    if (addresses.length === 0) throw new ToolError(`Could not resolve ${host} (no addresses).`);
  }
  if (!allowed) {
    for (const { address } of addresses) {
      const reason = nonPublicReason(address);
      if (reason)
        throw new ToolError(
          `Refused to fetch ${url.origin}: ${host} resolves to ${reason}. Only public internet addresses can be fetched.`,
        );
    }
  }
  const [first] = addresses as [ResolvedAddress];
  return {
    address: first.address,
    family: first.family,
    lookup: (_hostname, lookupOptions, callback) => {
      if (lookupOptions.all) callback(null, [{ address: first.address, family: first.family }]);
      else callback(null, first.address, first.family);
    },
  };
}
