import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import type { AgentToolResult, ToolResultMessage } from "../../src/agent/index.js";
import type { RunTool } from "../../src/runs/index.js";
import {
  DEFAULT_TOOL_RESULT_MAX_CHARS,
  limitToolResult,
  limitToolResults,
  truncateText,
} from "../../src/runs/tool-result-limit.js";
import { defineTool } from "../../src/tools/index.js";
import { RunsHarness } from "./harness.js";

const MB = 1_000_000;

/** A text with a recognisable start and end around `length` characters of filler. */
function big(length: number, filler = "x"): string {
  return `START-OF-OUTPUT\n${filler.repeat(length)}\nEND-OF-OUTPUT`;
}

const textOf = (result: { content: { type: string; text?: string }[] }) =>
  result.content.map((block) => (block.type === "text" ? block.text : `[${block.type}]`)).join("");

describe("limitToolResult", () => {
  it("keeps the head and tail of a long text and says how much was cut", () => {
    const text = big(50 * MB);
    const out = truncateText(text, 32_000);
    expect(out.length).toBeLessThanOrEqual(32_000);
    expect(out.startsWith("START-OF-OUTPUT\n")).toBe(true);
    expect(out.endsWith("\nEND-OF-OUTPUT")).toBe(true);
    const cut =
      /\[… ([\d,]+) characters cut here\. This tool result was truncated: it had ([\d,]+) characters/.exec(
        out,
      );
    expect(cut).not.toBeNull();
    const cutChars = Number(cut![1]!.replaceAll(",", ""));
    expect(Number(cut![2]!.replaceAll(",", ""))).toBe(text.length);
    // What is shown plus what was cut is the whole text.
    const marker = out.slice(out.indexOf("\n\n[…"), out.indexOf("…]\n\n") + 4);
    expect(out.length - marker.length + cutChars).toBe(text.length);
  });

  it("cuts at line boundaries when there are some, and never inside a surrogate pair", () => {
    const lines = Array.from({ length: 20_000 }, (_, i) => `line ${i}: ${"🙂".repeat(3)}`).join("\n");
    const out = truncateText(lines, 5_000);
    const [head, tail] = out.split(/\n\n\[….*…\]\n\n/s);
    expect(head!.endsWith("\n") || /🙂$/.test(head!)).toBe(true);
    expect(tail!.startsWith("line ")).toBe(true);
    expect(out).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])/);
    expect(out).not.toMatch(/(?<![\ud800-\udbff])[\udc00-\udfff]/);
  });

  it("returns a result within the limits unchanged", () => {
    const result: AgentToolResult = { content: [{ type: "text", text: "small" }], details: { a: 1 } };
    expect(limitToolResult(result, { maxChars: DEFAULT_TOOL_RESULT_MAX_CHARS })).toBe(result);
  });

  it("bounds all text blocks together and keeps images in order within their budget", () => {
    const image = (kib: number) => ({
      type: "image" as const,
      data: "A".repeat(kib * 1024),
      mimeType: "image/png",
    });
    const result: AgentToolResult = {
      content: [
        { type: "text", text: big(20_000, "a") },
        image(10),
        { type: "text", text: big(20_000, "b") },
        image(5_000),
        image(10),
      ],
      details: { raw: "r".repeat(MB) },
    };
    const out = limitToolResult(result, { maxChars: 10_000 });
    const texts = out.content.filter((block) => block.type === "text");
    const total = texts.reduce((n, block) => n + (block.type === "text" ? block.text.length : 0), 0);
    expect(total).toBeLessThanOrEqual(10_000);
    expect(out.content.map((block) => block.type)).toEqual(["text", "image", "image"]);
    expect(textOf(out)).toMatch(/^START-OF-OUTPUT/);
    // The image that did not fit is named (decoded size) where the cut text ends; the others stay.
    expect(textOf(out)).toMatch(
      /END-OF-OUTPUT\n\[An image \(image\/png, 3,750 KiB\) was left out: it is too large for a tool result\.\]\[image\]\[image\]$/,
    );
    expect(out.details).toEqual({ truncated: true, reason: expect.stringMatching(/characters of JSON/) });
  });

  it("wraps every tool: results, progress updates and error messages are bounded; fields and `this` kept", async () => {
    class Dumper implements RunTool {
      name = "dump";
      description = "Dumps a lot.";
      parameters = z.object({ fail: z.boolean() });
      approval = "ask" as const;
      private readonly size = 2 * MB;
      async execute(
        _id: string,
        params: { fail: boolean },
        _signal?: AbortSignal,
        onUpdate?: (partial: AgentToolResult) => void,
      ): Promise<AgentToolResult> {
        onUpdate?.({ content: [{ type: "text", text: big(this.size) }], details: {} });
        if (params.fail) throw new Error(big(this.size));
        return { content: [{ type: "text", text: big(this.size) }], details: {} };
      }
    }
    const [tool] = limitToolResults([new Dumper()], { maxChars: 2_000 });
    expect(tool).toBeInstanceOf(Dumper);
    expect(tool!.approval).toBe("ask");
    const updates: AgentToolResult[] = [];
    const result = await tool!.execute("c1", { fail: false }, undefined, (partial) => updates.push(partial));
    expect(textOf(result).length).toBeLessThanOrEqual(2_000);
    expect(textOf(updates[0]!).length).toBeLessThanOrEqual(2_000);
    const error = await tool!.execute("c2", { fail: true }).catch((err: unknown) => err as Error);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message.length).toBeLessThanOrEqual(2_000);
    expect((error as Error).message).toMatch(/^START-OF-OUTPUT[\s\S]*truncated[\s\S]*END-OF-OUTPUT$/);
  });
});

describe("bounds in a real run (real Redis, scripted model, memory chat)", () => {
  let h: RunsHarness;
  afterEach(async () => {
    await h?.close();
  });

  it("stores a 50 MB tool result (and a defineTool one) in Redis within the cap, and tells the model it was cut", async () => {
    const huge: RunTool = {
      name: "huge",
      description: "Returns 50 MB.",
      parameters: z.object({}),
      execute: async () => ({
        content: [{ type: "text", text: big(50 * MB) }],
        details: { output: big(50 * MB) },
      }),
    };
    const defined = defineTool({
      name: "defined",
      description: "Returns 5 MB, as an MCP server might.",
      parameters: z.object({}),
      execute: async () => big(5 * MB, "y"),
    });
    h = await new RunsHarness({
      config: { toolResultMaxChars: 8_000 },
      agent: {
        tools: (ctx) => [huge, defined.forRun({ ...ctx, workspaceDir: "/tmp" }) as RunTool],
      },
      script: [
        {
          toolCalls: [
            { id: "c1", name: "huge", arguments: {} },
            { id: "c2", name: "defined", arguments: {} },
          ],
        },
        { text: "done" },
      ],
    }).start();
    const thread = h.thread();
    await h.runFinished(await h.mention(thread, "dump it"));

    const stored = await h.redis.lrange(h.keys(thread).transcript, 0, -1);
    const bytes = stored.reduce((n, item) => n + Buffer.byteLength(item), 0);
    expect(bytes).toBeLessThan(40_000);
    const results = (await h.transcript(thread)).filter(
      (m): m is ToolResultMessage => (m as { role?: string }).role === "toolResult",
    );
    expect(results.map((m) => m.toolName)).toEqual(["huge", "defined"]);
    for (const result of results) {
      const text = textOf(result);
      expect(text.length).toBeLessThanOrEqual(8_000);
      expect(text).toMatch(/^START-OF-OUTPUT[\s\S]*This tool result was truncated[\s\S]*END-OF-OUTPUT$/);
    }
    // The model's next request carried the cut results, marker included.
    const seen = h.model.requests[1]!.messages.filter((m) => m.role === "toolResult");
    expect(seen).toHaveLength(2);
    for (const message of seen) expect(textOf(message as ToolResultMessage)).toContain("characters cut here");
  });

  it("posts at most the configured number of chat messages for a very long answer, the last saying it was cut", async () => {
    const paragraph = `${"All work and no play makes Jack a dull boy. ".repeat(20)}\n\n`;
    h = await new RunsHarness({
      config: { replyMaxMessages: 3, replyMaxChars: 1_000_000 },
      script: [{ text: Array.from({ length: 200 }, () => paragraph) }],
    }).start();
    const thread = h.thread();
    await h.runFinished(await h.mention(thread, "write a lot"));
    const texts = h.chat.texts(thread);
    expect(texts).toHaveLength(3);
    expect(texts[2]).toMatch(/The answer was cut off here/);
    // The transcript keeps what the model said.
    const answer = (await h.transcript(thread)).at(-1) as { content: { type: string; text?: string }[] };
    expect(textOf(answer).length).toBe(paragraph.length * 200);
  });
});
