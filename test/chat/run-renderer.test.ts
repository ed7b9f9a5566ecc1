import { describe, expect, it } from "vitest";
import { z } from "zod";
import { Agent, type AgentEvent } from "../../src/agent/index.js";
import {
  type ChatDialect,
  createRunRenderer,
  MARKDOWN_DIALECT,
  type OutboundLimits,
  type RenderOperation,
  type RunStats,
  type ThreadRef,
  threadId,
} from "../../src/chat/index.js";
import { DISCORD_DIALECT } from "../../src/discord/dialect.js";
import { SLACK_DIALECT } from "../../src/slack/dialect.js";
import { MemoryOutbound } from "../fakes/memory-outbound.js";
import { ScriptedModel, TEST_MODEL } from "../fakes/scripted-model.js";
import { events as e } from "./events.js";
import { ManualClock, settle } from "./manual-clock.js";

const thread: ThreadRef = { platform: "slack", workspace: "T1", channel: "C1", thread: "1700000000.000100" };
const key = threadId(thread);
const stats: RunStats = { turns: 2, toolCalls: 1, inputTokens: 1200, outputTokens: 300 };

function setup(limits: Partial<OutboundLimits> = {}, footer = true, dialect: ChatDialect = MARKDOWN_DIALECT) {
  const chat = new MemoryOutbound({
    limits: { minEditIntervalMs: 1000, maxMessageChars: 4000, ...limits },
    dialect,
  });
  const clock = new ManualClock();
  const errors: [string, RenderOperation][] = [];
  const renderer = createRunRenderer({
    outbound: chat,
    thread,
    footer,
    clock,
    onError: (err, operation) => errors.push([err instanceof Error ? err.message : String(err), operation]),
  });
  /** Feeds events, then lets the renderer's queued work run. */
  const feed = async (...list: AgentEvent[]) => {
    for (const event of list) renderer.handle(event);
    await settle();
  };
  /** Finishes while moving the clock, as a real clock would move during the final throttled edit. */
  const finish = async (
    outcome: Parameters<typeof renderer.finish>[0] = { kind: "completed" },
    s = stats,
  ) => {
    const done = renderer.finish(outcome, s);
    await clock.advance(10_000);
    await done;
  };
  return { chat, clock, errors, renderer, feed, finish };
}

/** Every edit changes the message's text (no edit re-sends what the message already shows). */
function expectNoRedundantEdits(chat: MemoryOutbound): void {
  const shown = new Map<string, string>();
  for (const op of chat.ops) {
    if (op.error !== undefined) continue;
    if (op.op === "post") shown.set(op.messageId!, op.text!);
    if (op.op === "edit") {
      expect(op.text, `edit of ${op.messageId} changes its text`).not.toBe(shown.get(op.messageId!));
      shown.set(op.messageId!, op.text!);
    }
  }
}

describe("createRunRenderer", () => {
  it("shows status, posts early, edits throttled and coalesced, and flushes the final text", async () => {
    const { chat, clock, feed, finish, errors } = setup();
    await feed(e.turnStart(), e.assistantStart(), e.text("Let me "));
    await feed(e.text("check."));
    await clock.advance(500);
    await feed(e.text(" More."));
    await clock.advance(500); // t=1000: one edit with both deltas
    await feed(e.textEnd("Let me check. More."), e.assistantEnd("toolUse"), e.toolStart("t1", "search"));
    await clock.advance(200);
    await feed(e.toolEnd("t1", "search", { durationMs: 1234 }));
    await clock.advance(800); // t=2000: the running line was never shown, only its result
    await feed(e.turnStart(), e.assistantStart(), e.text("Found it."), e.assistantEnd());
    await finish();

    expect(chat.ops).toEqual([
      { op: "setStatus", thread: key, status: "is thinking…" },
      { op: "post", thread: key, text: "Let me", messageId: "m1" },
      { op: "edit", thread: key, messageId: "m1", text: "Let me check. More." },
      { op: "setStatus", thread: key, status: "is running search…" },
      { op: "setStatus", thread: key, status: "is thinking…" },
      { op: "edit", thread: key, messageId: "m1", text: "Let me check. More.\n\n🔧 search ✓ 1.2s" },
      {
        op: "edit",
        thread: key,
        messageId: "m1",
        text: "Let me check. More.\n\n🔧 search ✓ 1.2s\n\nFound it.\n\n-# 2 turns · 1 tool call · 1.5k tokens",
      },
      { op: "endRun", thread: key },
    ]);
    expect(errors).toEqual([]);
  });

  it("keeps edits of one message at least minEditIntervalMs apart however fast text streams", async () => {
    const { chat, clock, feed, finish } = setup({ minEditIntervalMs: 1000 });
    await feed(e.turnStart(), e.assistantStart());
    const startedAt: number[] = [];
    chat.subscribe((op) => {
      if (op.op === "post" || op.op === "edit") startedAt.push(clock.now());
    });
    for (let index = 0; index < 200; index++) {
      await feed(e.text(`word${index} `));
      await clock.advance(37);
    }
    await finish();
    expect(startedAt.length).toBeGreaterThan(5);
    expect(startedAt.length).toBeLessThan(12);
    for (let index = 1; index < startedAt.length; index++) {
      expect(startedAt[index]! - startedAt[index - 1]!).toBeGreaterThanOrEqual(1000);
    }
    expect(chat.texts(thread)[0]).toContain("word199");
    expectNoRedundantEdits(chat);
  });

  it("never edits with unchanged content (whitespace, thinking, a text_end that changes nothing)", async () => {
    const { chat, clock, feed, finish } = setup();
    await feed(e.turnStart(), e.assistantStart(), e.thinking("hmm"), e.text("Hello"));
    await clock.advance(1000);
    await feed(e.text("\n\n"), e.thinking("more"));
    await clock.advance(1000);
    await feed(e.text("  "), e.textEnd("Hello\n\n  "), e.assistantEnd());
    await clock.advance(1000);
    await finish({ kind: "completed" }, stats);
    expect(chat.ops.filter((op) => op.op === "post" || op.op === "edit").map((op) => op.text)).toEqual([
      "Hello",
      "Hello\n\n-# 2 turns · 1 tool call · 1.5k tokens",
    ]);
    expectNoRedundantEdits(chat);
  });

  it("serializes operations per message: no edit before the post resolved, never two in flight", async () => {
    const { chat, clock, feed, finish } = setup();
    chat.pause();
    await feed(e.turnStart(), e.assistantStart(), e.text("One"));
    await clock.advance(5000);
    await feed(e.text(" two"));
    await clock.advance(5000);
    expect(chat.waiting).toBe(2); // the status and the post; no edit was issued while the post is pending
    chat.release(2);
    await settle();
    expect(chat.texts(thread)).toEqual(["One"]);
    await feed(e.text(" three"));
    await clock.advance(1000);
    expect(chat.waiting).toBe(1); // the edit with " two three"
    await feed(e.text(" four"));
    await clock.advance(5000);
    expect(chat.waiting).toBe(1); // still that one edit: the next waits for it
    chat.resume();
    await settle();
    await finish({ kind: "completed" }, { turns: 1, toolCalls: 0, inputTokens: 0, outputTokens: 0 });
    expect(chat.texts(thread)).toEqual(["One two three four\n\n-# 1 turn"]);
    expect(chat.maxInFlightPerMessage).toBe(1);
    expectNoRedundantEdits(chat);
  });

  it("reports a failed edit, keeps going, and still delivers the final text", async () => {
    const { chat, clock, feed, finish, errors } = setup();
    await feed(e.turnStart(), e.assistantStart(), e.text("Working"));
    chat.failNext("edit", 1);
    await feed(e.text(" on it"));
    await clock.advance(1000);
    expect(errors).toEqual([["edit failed in slack:T1:C1:1700000000.000100: injected_failure", "edit"]]);
    await feed(e.text(" now."), e.assistantEnd());
    await clock.advance(1000);
    expect(chat.texts(thread)).toEqual(["Working on it now."]);
    await finish();
    expect(chat.texts(thread)).toEqual(["Working on it now.\n\n-# 2 turns · 1 tool call · 1.5k tokens"]);
  });

  it("retries the final flush once when it fails", async () => {
    const { chat, clock, feed, finish, errors } = setup();
    await feed(e.turnStart(), e.assistantStart(), e.text("Answer"), e.assistantEnd());
    await clock.advance(1000);
    chat.failNext("edit", 1);
    chat.failNext("endRun", 1);
    await finish();
    expect(chat.texts(thread)).toEqual(["Answer\n\n-# 2 turns · 1 tool call · 1.5k tokens"]);
    expect(errors.map(([, operation]) => operation)).toEqual(["edit", "endRun"]);
    const edits = chat.ops.filter((op) => op.op === "edit");
    expect(edits.map((op) => op.error === undefined)).toEqual([false, true]);
  });

  it("posts again when the first post failed", async () => {
    const { chat, clock, feed, finish, errors } = setup();
    chat.failNext("post", 1);
    await feed(e.turnStart(), e.assistantStart(), e.text("Hi"));
    expect(errors.map(([, operation]) => operation)).toEqual(["post"]);
    await feed(e.text(" there"));
    await clock.advance(1000);
    expect(chat.texts(thread)).toEqual(["Hi there"]);
    await finish({ kind: "completed" }, { turns: 1, toolCalls: 0, inputTokens: 0, outputTokens: 0 });
    expect(chat.texts(thread)).toEqual(["Hi there\n\n-# 1 turn"]);
  });

  it("delivers the final text even if every streaming operation failed", async () => {
    const { chat, clock, feed, finish } = setup();
    chat.failNext("post", 1);
    await feed(e.turnStart(), e.assistantStart(), e.text("Never shown while streaming"), e.assistantEnd());
    await clock.advance(3000);
    await finish({ kind: "completed" }, { turns: 1, toolCalls: 0, inputTokens: 0, outputTokens: 0 });
    expect(chat.texts(thread)).toEqual(["Never shown while streaming\n\n-# 1 turn"]);
  });

  it("splits a long streamed answer into several messages that fit, freezing earlier ones", async () => {
    const { chat, clock, feed, finish } = setup({ maxMessageChars: 500 });
    const paragraphs = Array.from(
      { length: 6 },
      (_, index) => `Paragraph ${index}: ${"lorem ipsum ".repeat(12).trim()}.`,
    );
    const code = `\`\`\`ts\n${Array.from({ length: 60 }, (_, index) => `const v${index} = ${index};`).join("\n")}\n\`\`\``;
    const answer = [...paragraphs.slice(0, 3), code, ...paragraphs.slice(3)].join("\n\n");
    await feed(e.turnStart(), e.assistantStart());
    for (let offset = 0; offset < answer.length; offset += 40) {
      await feed(e.text(answer.slice(offset, offset + 40)));
      await clock.advance(300);
    }
    await feed(e.textEnd(answer), e.assistantEnd());
    await finish({ kind: "completed" }, { turns: 1, toolCalls: 0, inputTokens: 0, outputTokens: 0 });

    const texts = chat.texts(thread);
    expect(texts.length).toBeGreaterThanOrEqual(Math.ceil(answer.length / 500));
    for (const text of texts) {
      expect(text.length).toBeLessThanOrEqual(500);
      expect((text.match(/^```/gm) ?? []).length % 2).toBe(0);
    }
    const joined = texts.join("\n").replace(/\n```\n```ts\n/g, "\n");
    expect(joined.replace(/\s+/g, " ")).toBe(`${answer}\n\n-# 1 turn`.replace(/\s+/g, " "));
    // A message is frozen once the next one exists: at most its final edit follows the next post.
    const ids = chat.messages(thread).map((message) => message.id);
    for (const [index, id] of ids.slice(0, -1).entries()) {
      const nextPost = chat.ops.findIndex((op) => op.op === "post" && op.messageId === ids[index + 1]);
      const later = chat.ops.slice(nextPost).filter((op) => op.op === "edit" && op.messageId === id);
      expect(later.length).toBeLessThanOrEqual(1);
    }
    expect(chat.maxInFlightPerMessage).toBe(1);
    expectNoRedundantEdits(chat);
  });

  it("posts continuation messages in thread order even while the first post is slow", async () => {
    const { chat, clock, renderer, feed } = setup({ maxMessageChars: 100 }, false);
    chat.pause();
    await feed(e.turnStart(), e.assistantStart(), e.text("First paragraph."));
    await feed(e.text(`\n\n${"Second paragraph is long. ".repeat(6)}`), e.assistantEnd());
    const done = renderer.finish({ kind: "completed" }, stats);
    await clock.advance(5000);
    expect(chat.waiting).toBe(2); // the status and the first post; the second post waits for the first
    chat.resume();
    await clock.advance(5000);
    await done;
    const posts = chat.ops.filter((op) => op.op === "post").map((op) => op.text);
    expect(posts[0]).toBe("First paragraph.");
    expect(chat.texts(thread).join(" ")).toBe(
      `First paragraph. ${"Second paragraph is long. ".repeat(6).trim()}`,
    );
    for (const text of chat.texts(thread)) expect(text.length).toBeLessThanOrEqual(100);
  });

  it("keeps progress lines of running tools updatable when they fill more than one message", async () => {
    const { chat, clock, feed, finish } = setup({ maxMessageChars: 100 }, false);
    await feed(e.turnStart(), e.assistantStart(), e.assistantEnd("toolUse"));
    const ids = Array.from({ length: 10 }, (_, index) => `t${index}`);
    for (const id of ids) await feed(e.toolStart(id, `tool_${id}`));
    await clock.advance(1000);
    expect(chat.texts(thread).join("\n").match(/…/g)).toHaveLength(10);
    for (const id of ids) await feed(e.toolEnd(id, `tool_${id}`, { durationMs: 100 }));
    await finish();
    const lines = chat.texts(thread).join("\n").split("\n");
    expect(lines).toEqual(ids.map((id) => `🔧 tool_${id} ✓ 0.1s`));
    for (const text of chat.texts(thread)) expect(text.length).toBeLessThanOrEqual(100);
  });

  it("converts Markdown to Slack mrkdwn and keeps every message within the limit after conversion", async () => {
    const { chat, clock, feed, finish } = setup({ maxMessageChars: 300 }, true, SLACK_DIALECT);
    const answer = `**Result** for [docs](https://example.com):\n\n${"Tom & Jerry & co. ".repeat(40)}`;
    await feed(e.turnStart(), e.assistantStart(), e.text(answer), e.assistantEnd());
    await clock.advance(1000);
    await finish();
    const texts = chat.texts(thread);
    expect(texts[0]).toBe("\u200b*Result*\u200b for <https://example.com|docs>:");
    for (const text of texts) expect(text.length).toBeLessThanOrEqual(300);
    expect(texts.join(" ")).toContain("Tom &amp; Jerry &amp; co.");
    expect(texts.at(-1)).toMatch(/\u200b_2 turns · 1 tool call · 1\.5k tokens_\u200b$/);
  });

  it("uses Discord subtext for the footer and can leave the footer out", async () => {
    const discord = setup({}, true, DISCORD_DIALECT);
    await discord.feed(e.turnStart(), e.assistantStart(), e.text("Hi"), e.assistantEnd());
    await discord.finish();
    expect(discord.chat.texts(thread)).toEqual(["Hi\n\n-# 2 turns · 1 tool call · 1.5k tokens"]);

    const plain = setup({}, false);
    await plain.feed(e.turnStart(), e.assistantStart(), e.text("Hi"), e.assistantEnd());
    await plain.finish();
    expect(plain.chat.texts(thread)).toEqual(["Hi"]);
  });

  it("shows tool progress in order, with failures as a short line", async () => {
    const { chat, clock, feed, finish } = setup({}, false);
    await feed(e.turnStart(), e.assistantStart(), e.assistantEnd("toolUse"));
    expect(chat.counts.post).toBe(0); // nothing visible yet
    await feed(e.toolStart("a", "read_file"), e.toolStart("b", "fetch"));
    expect(chat.texts(thread)).toEqual(["🔧 read_file …\n🔧 fetch …"]);
    await clock.advance(400);
    await feed(e.toolEnd("b", "fetch", { error: "ECONNREFUSED 127.0.0.1:80\n    at connect (net.js:1:1)" }));
    await clock.advance(600);
    expect(chat.texts(thread)).toEqual(["🔧 read_file …\n🔧 fetch ✗ ECONNREFUSED 127.0.0.1:80"]);
    await clock.advance(1100);
    await feed(e.toolEnd("a", "read_file")); // no durationMs: measured with the clock
    await finish();
    expect(chat.texts(thread)).toEqual(["🔧 read_file ✓ 2.1s\n🔧 fetch ✗ ECONNREFUSED 127.0.0.1:80"]);
  });

  it("turns a failed model call into a short human line, never a stack trace", async () => {
    const { chat, feed, finish } = setup({}, false);
    await feed(e.turnStart(), e.assistantStart(), e.text("Partial answer"));
    await feed(
      e.assistantEnd("error", "Rate limited by the model provider (429).\n    at request (openai.js:1:1)"),
    );
    await finish({ kind: "failed", message: "Rate limited by the model provider (429)." });
    expect(chat.texts(thread)).toEqual(["Partial answer\n\n⚠️ Rate limited by the model provider (429)."]);
  });

  it("says who stopped the run, without a separate line for the aborted request", async () => {
    const { chat, feed, finish } = setup({}, false);
    await feed(
      e.turnStart(),
      e.assistantStart(),
      e.text("Looking"),
      e.assistantEnd("aborted", "Request was aborted"),
    );
    await finish({ kind: "stopped", by: { id: "U1", name: "Ada" } });
    expect(chat.texts(thread)).toEqual(["Looking\n\n🛑 Stopped by Ada."]);
  });

  it("explains an aborted request when the run was not stopped by someone, and budget stops", async () => {
    const aborted = setup({}, false);
    await aborted.feed(e.turnStart(), e.assistantStart(), e.assistantEnd("aborted", "Request was aborted"));
    await aborted.finish({ kind: "completed" });
    expect(aborted.chat.texts(thread)).toEqual(["⚠️ Request was aborted"]);

    const budget = setup({}, false);
    await budget.feed(e.turnStart(), e.assistantStart(), e.text("Step 1 done."), e.assistantEnd());
    await budget.finish({
      kind: "budget",
      reason: "This run reached its limit of 1 turns, so it was stopped.",
    });
    expect(budget.chat.texts(thread)).toEqual([
      "Step 1 done.\n\n⚠️ This run reached its limit of 1 turns, so it was stopped.",
    ]);
  });

  it("says so when a run produced nothing to show", async () => {
    const { chat, feed, finish } = setup({}, false);
    await feed(e.turnStart(), e.assistantStart(), e.assistantEnd());
    await finish();
    expect(chat.texts(thread)).toEqual(["_(no reply)_"]);
  });

  it("continues in a new message below a user message delivered mid-run", async () => {
    const { chat, clock, feed, finish } = setup({}, false);
    await feed(e.user("do X"), e.turnStart(), e.assistantStart(), e.text("Doing X."), e.assistantEnd());
    await feed(e.user("actually, do Y"), e.turnStart(), e.assistantStart(), e.text("Doing Y instead."));
    await clock.advance(1000);
    await feed(e.assistantEnd());
    await finish();
    expect(chat.texts(thread)).toEqual(["Doing X.", "Doing Y instead."]);
  });

  it("closes a code block the model left open before what follows", async () => {
    const { chat, feed, finish } = setup({}, false);
    await feed(e.turnStart(), e.assistantStart(), e.text("```sh\nls"), e.assistantEnd("toolUse"));
    await feed(e.toolStart("t", "shell"), e.toolEnd("t", "shell", { durationMs: 100 }));
    await finish();
    expect(chat.texts(thread)).toEqual(["```sh\nls\n```\n\n🔧 shell ✓ 0.1s"]);
  });

  it("ignores events after finish and finishes only once", async () => {
    const { chat, renderer, feed, finish } = setup({}, false);
    await feed(e.turnStart(), e.assistantStart(), e.text("Done."), e.assistantEnd());
    await finish();
    const count = chat.ops.length;
    renderer.handle(e.text(" more"));
    await renderer.finish({ kind: "completed" }, stats);
    await settle();
    expect(chat.ops.length).toBe(count);
    expect(chat.texts(thread)).toEqual(["Done."]);
  });

  it("renders a real Agent run driven by the scripted model", async () => {
    const chat = new MemoryOutbound({ limits: { minEditIntervalMs: 0 } });
    const model = new ScriptedModel([
      { text: ["Let me ", "look."], toolCalls: [{ id: "t1", name: "lookup", arguments: { q: "x" } }] },
      { text: ["The answer ", "is **42**."] },
    ]);
    const lookup = {
      name: "lookup",
      description: "lookup",
      parameters: z.object({ q: z.string() }),
      execute: async () => ({ content: [{ type: "text" as const, text: "42" }], details: {} }),
    };
    const agent = new Agent({
      initialState: { model: TEST_MODEL, tools: [lookup] },
      streamFn: model.streamFn,
    });
    const renderer = createRunRenderer({ outbound: chat, thread });
    agent.subscribe((event) => renderer.handle(event));
    await agent.prompt("question");
    await renderer.finish({ kind: "completed" }, { turns: 2, toolCalls: 1, inputTokens: 0, outputTokens: 0 });

    expect(chat.texts(thread)).toHaveLength(1);
    expect(chat.texts(thread)[0]).toMatch(
      /^Let me look\.\n\n🔧 lookup ✓ \d+\.\ds\n\nThe answer is \*\*42\*\*\.\n\n-# 2 turns · 1 tool call$/,
    );
    expect(chat.ops[0]).toEqual({ op: "setStatus", thread: key, status: "is thinking…" });
    expect(chat.ops.at(-1)).toEqual({ op: "endRun", thread: key });
    expect(chat.ops.filter((op) => op.op === "post")).toHaveLength(1);
    expect(chat.maxInFlightPerMessage).toBe(1);
    expectNoRedundantEdits(chat);
  });
});
