import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { AgentToolResult } from "../../src/agent/index.js";
import { type FetchUrlOptions, fetchUrlTool, nonPublicReason, type Resolver } from "../../src/tools/index.js";
import { call, textOf } from "./helpers.js";

const PAGE = `<!doctype html><html><head><title>Release notes &amp; more</title><style>body{color:red}</style>
<script>window.secret = "do-not-show";</script></head><body><nav>Home | About</nav>
<main><h1>Version 2.0</h1><p>Threadline now supports <strong>MCP</strong> servers.</p>
<ul><li>fetch_url</li><li>shell</li></ul><pre><code>npm i threadline</code></pre>
<p>See <a href="https://example.com/docs">the docs</a>.</p></main></body></html>`;

let server: Server;
let port: number;
const hits: { path: string; host: string | undefined }[] = [];
let hangingResponses: ServerResponse[] = [];

function route(req: IncomingMessage, res: ServerResponse): void {
  hits.push({ path: req.url ?? "", host: req.headers.host });
  const path = req.url ?? "/";
  if (path === "/page") res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(PAGE);
  else if (path === "/text") res.writeHead(200, { "content-type": "text/plain" }).end("just text");
  else if (path === "/json")
    res.writeHead(200, { "content-type": "application/json" }).end('{"a":1,"b":[2,3]}');
  else if (path === "/gzip")
    res
      .writeHead(200, { "content-type": "text/plain", "content-encoding": "gzip" })
      .end(gzipSync("compressed hello"));
  else if (path === "/png")
    res.writeHead(200, { "content-type": "image/png" }).end(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0]));
  else if (path === "/big") res.writeHead(200, { "content-type": "text/plain" }).end("x".repeat(50_000));
  else if (path === "/missing") res.writeHead(404, { "content-type": "text/plain" }).end("no such page");
  else if (path === "/hang") hangingResponses.push(res);
  else if (path === "/redirect-ok") res.writeHead(302, { location: "/text" }).end();
  else if (path === "/redirect-metadata")
    res.writeHead(302, { location: "http://169.254.169.254/latest/meta-data/" }).end();
  else if (path === "/redirect-private") res.writeHead(301, { location: "http://10.0.0.7/admin" }).end();
  else if (path === "/redirect-localhost")
    res.writeHead(307, { location: `http://localhost:${port}/secret` }).end();
  else if (path === "/redirect-rebind")
    res.writeHead(302, { location: `http://rebind.example:${port}/secret` }).end();
  else if (path === "/loop") res.writeHead(302, { location: "/loop" }).end();
  else if (path === "/secret") res.writeHead(200, { "content-type": "text/plain" }).end("internal secret");
  else res.writeHead(404).end();
}

beforeAll(async () => {
  server = createServer(route);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  for (const res of hangingResponses) res.destroy();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

beforeEach(() => {
  hits.length = 0;
  hangingResponses = [];
});

const local = (path: string) => `http://127.0.0.1:${port}${path}`;
/** The tool as a test opts in to fetching its own loopback server. */
const allowLocal = (options: FetchUrlOptions = {}) => fetchUrlTool({ allowHosts: ["127.0.0.1"], ...options });
/** A resolver that answers like a DNS server under the test's control. */
const dns =
  (answers: Record<string, string[]>, log: string[] = []): Resolver =>
  async (hostname) => {
    log.push(hostname);
    const addresses = answers[hostname];
    if (!addresses) throw Object.assign(new Error("not found"), { code: "ENOTFOUND" });
    return addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));
  };

describe("fetch_url: reading pages", () => {
  it("turns HTML into Markdown with the title, without scripts, styles or navigation", async () => {
    const text = textOf(await call(allowLocal(), { url: local("/page") }));
    expect(text).toContain("# Release notes & more");
    expect(text).toContain(`URL: ${local("/page")}`);
    expect(text).toContain("# Version 2.0");
    expect(text).toContain("**MCP**");
    expect(text).toMatch(/-\s+fetch_url\n-\s+shell/);
    expect(text).toContain("```\nnpm i threadline\n```");
    expect(text).toContain("[the docs](https://example.com/docs)");
    expect(text).not.toContain("do-not-show");
    expect(text).not.toContain("color:red");
    expect(text).not.toContain("Home | About");
  });

  it("returns text as is, pretty-prints JSON and decompresses gzip", async () => {
    expect(textOf(await call(allowLocal(), { url: local("/text") }))).toContain("just text");
    expect(textOf(await call(allowLocal(), { url: local("/json") }))).toContain('{\n  "a": 1,');
    expect(textOf(await call(allowLocal(), { url: local("/gzip") }))).toContain("compressed hello");
  });

  it("refuses content that is not text, and reports HTTP errors readably", async () => {
    await expect(call(allowLocal(), { url: local("/png") })).rejects.toThrow(/image\/png .* not text/);
    await expect(call(allowLocal(), { url: local("/missing") })).rejects.toThrow(
      /GET .*\/missing answered 404 Not Found\. Body: no such page/,
    );
  });

  it("cuts bodies over maxBytes and answers over maxChars, and says so", async () => {
    const text = textOf(await call(allowLocal({ maxBytes: 1000, maxChars: 300 }), { url: local("/big") }));
    expect(text).toContain("longer than 1000 bytes and was cut");
    expect(text).toContain("700 more characters were left out");
    expect(text.match(/x/g)?.length).toBe(300);
  });

  it("gives up after its time limit and after too many redirects", async () => {
    await expect(call(allowLocal({ timeoutMs: 200 }), { url: local("/hang") })).rejects.toThrow(
      /took longer than 200 ms and was stopped/,
    );
    await expect(call(allowLocal({ maxRedirects: 3 }), { url: local("/loop") })).rejects.toThrow(
      /Too many redirects/,
    );
    expect(hits.filter((hit) => hit.path === "/loop")).toHaveLength(4);
  });

  it("follows redirects to allowed places and reports progress", async () => {
    const updates: AgentToolResult[] = [];
    const text = textOf(await call(allowLocal(), { url: local("/redirect-ok") }, { updates }));
    expect(text).toContain(`URL: ${local("/text")}`);
    expect(text).toContain("just text");
    expect(updates).toEqual([
      { content: [{ type: "text", text: `fetching ${local("/redirect-ok")}` }], details: {} },
    ]);
  });
});

describe("fetch_url: SSRF guard", () => {
  it.each([
    ["127.0.0.1", () => local("/secret"), /loopback/],
    ["::1", () => `http://[::1]:${port}/secret`, /reserved IPv6|loopback/],
    ["an IPv4-mapped loopback", () => `http://[::ffff:127.0.0.1]:${port}/secret`, /loopback/],
    ["10.0.0.0/8", () => "http://10.1.2.3/", /private network/],
    ["192.168.0.0/16", () => "http://192.168.1.1/", /private network/],
    ["the cloud metadata address", () => "http://169.254.169.254/latest/meta-data/", /link-local/],
    ["0.0.0.0", () => `http://0.0.0.0:${port}/secret`, /non-public/],
  ])("refuses %s without connecting", async (_name, url, reason) => {
    await expect(call(fetchUrlTool(), { url: url() })).rejects.toThrow(reason);
    expect(hits).toEqual([]);
  });

  it("refuses a public-looking host name that resolves to loopback (checked after DNS)", async () => {
    const resolve = dns({ "news.example.com": ["127.0.0.1"] });
    await expect(
      call(fetchUrlTool({ resolve }), { url: `http://news.example.com:${port}/secret` }),
    ).rejects.toThrow(/news\.example\.com resolves to a loopback address/);
    expect(hits).toEqual([]);
  });

  it("refuses a host when any of its addresses is private, even if others are public", async () => {
    const resolve = dns({ "mixed.example.com": ["93.184.216.34", "10.0.0.5"] });
    await expect(call(fetchUrlTool({ resolve }), { url: "http://mixed.example.com/" })).rejects.toThrow(
      /private/,
    );
  });

  it("an allow-listed name does not allow other names that resolve to the same address", async () => {
    const resolve = dns({ "evil.example.com": ["127.0.0.1"] });
    await expect(
      call(fetchUrlTool({ resolve, allowHosts: ["127.0.0.1"] }), {
        url: `http://evil.example.com:${port}/secret`,
      }),
    ).rejects.toThrow(/loopback/);
    expect(hits).toEqual([]);
  });

  it("re-checks every redirect: to the metadata address, a private address, or a loopback name", async () => {
    await expect(call(allowLocal(), { url: local("/redirect-metadata") })).rejects.toThrow(
      /169\.254\.169\.254.*link-local/,
    );
    await expect(call(allowLocal(), { url: local("/redirect-private") })).rejects.toThrow(
      /10\.0\.0\.7.*private/,
    );
    await expect(call(allowLocal(), { url: local("/redirect-localhost") })).rejects.toThrow(
      /localhost resolves to a loopback/,
    );
    const resolve = dns({ "rebind.example": ["127.0.0.1"] });
    await expect(call(allowLocal({ resolve }), { url: local("/redirect-rebind") })).rejects.toThrow(
      /rebind\.example/,
    );
    expect(hits.map((hit) => hit.path)).not.toContain("/secret");
  });

  it("connects to the address it checked: the connection is pinned, DNS is asked once per hop", async () => {
    const asked: string[] = [];
    // "pinned.test" does not exist in real DNS: the request only works if our lookup is the one used.
    const resolve = dns({ "pinned.test": ["127.0.0.1"] }, asked);
    const tool = fetchUrlTool({ resolve, allowHosts: [`pinned.test:${port}`] });
    const text = textOf(await call(tool, { url: `http://pinned.test:${port}/text` }));
    expect(text).toContain("just text");
    expect(asked).toEqual(["pinned.test"]);
    expect(hits).toEqual([{ path: "/text", host: `pinned.test:${port}` }]);
  });

  it("refuses other schemes and unparseable URLs", async () => {
    await expect(call(fetchUrlTool(), { url: "file:///etc/passwd" })).rejects.toThrow(/Only http and https/);
    await expect(call(fetchUrlTool(), { url: "not a url" })).rejects.toThrow(/not a valid URL/);
  });

  it("classifies addresses: only public unicast passes", () => {
    expect(nonPublicReason("93.184.216.34")).toBeUndefined();
    expect(nonPublicReason("2606:4700:4700::1111")).toBeUndefined();
    for (const address of [
      "127.0.0.1",
      "10.0.0.1",
      "172.16.5.4",
      "192.168.0.1",
      "169.254.169.254",
      "100.64.0.1",
      "0.0.0.0",
      "255.255.255.255",
      "224.0.0.1",
      "::1",
      "::",
      "fe80::1",
      "fd00::1",
      "::ffff:10.0.0.1",
      "64:ff9b::a00:1",
      "2002:a00:1::1",
      "2001:db8::1",
    ])
      expect(nonPublicReason(address), address).toBeDefined();
  });
});
