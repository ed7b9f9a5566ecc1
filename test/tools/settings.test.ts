import { describe, expect, it } from "vitest";
import type { z } from "zod";
import {
  builtinToolsSchema,
  fetchUrlSettingsSchema,
  fileToolsSettingsSchema,
  mcpServerSchema,
  shellSettingsSchema,
} from "../../src/tools/index.js";

/** `path message` of every problem, as the config module's error report words them. */
function problems(schema: z.ZodType, value: unknown): string[] {
  const parsed = schema.safeParse(value);
  return parsed.success
    ? []
    : parsed.error.issues.map((issue) =>
        [issue.path.join("."), issue.message].filter((part) => part !== "").join(" "),
      );
}

describe("built-in tool and MCP server settings", () => {
  it("each tool's settings schema checks its options with a message and an example", () => {
    expect(problems(fetchUrlSettingsSchema, { maxBytes: 0, userAgent: " " })).toEqual([
      "maxBytes must be greater than 0, for example 2097152",
      'userAgent must not be empty, for example "MyBot/1.0"',
    ]);
    expect(problems(fetchUrlSettingsSchema, { maxRedirects: -1 })).toEqual([
      "maxRedirects must be 0 (no redirects) or more, for example 5",
    ]);
    expect(problems(fileToolsSettingsSchema, { maxEntries: 2.5 })).toEqual([
      "maxEntries must be a whole number, for example 500",
    ]);
    expect(problems(shellSettingsSchema, { sandbox: "docker", network: "yes" })).toEqual([
      "network must be true or false",
      'sandbox must be "bwrap" or "none"',
    ]);
    // Only code passes a DNS resolver: it is not a setting.
    expect(problems(fetchUrlSettingsSchema, { resolve: async () => [] })).toEqual([
      'Unrecognized key: "resolve"',
    ]);
  });

  it("the built-ins are switched on, off, or on with settings", () => {
    expect(
      problems(builtinToolsSchema, { fetchUrl: false, files: true, shell: { timeoutMs: 1000 } }),
    ).toEqual([]);
    expect(problems(builtinToolsSchema, { shell: "yes" })).toEqual([
      "shell must be true, false or an object of settings",
    ]);
  });

  it("an MCP server needs exactly one of command and url", () => {
    expect(problems(mcpServerSchema, { command: "npx", args: ["-y", "server"] })).toEqual([]);
    expect(
      problems(mcpServerSchema, { url: "https://mcp.example.com/mcp", reconnect: { maxDelayMs: 0 } }),
    ).toEqual(["reconnect.maxDelayMs must be greater than 0, for example 60000"]);
    expect(problems(mcpServerSchema, { command: "npx", url: "https://mcp.example.com/mcp" })).toEqual([
      'needs either command (a server started over stdio, e.g. command: "npx") or url (streamable HTTP, e.g. url: "https://mcp.example.com/mcp"), not both',
    ]);
  });
});
