import { describe, expect, it } from "vitest";
import type { AgentEvent } from "../../src/agent/index.js";
import {
  createRunRenderer,
  DEFAULT_REPLY_MAX_MESSAGES,
  type OutboundLimits,
  type RunRendererOptions,
  type RunStats,
  type ThreadRef,
} from "../../src/chat/index.js";
import { MemoryOutbound } from "../fakes/memory-outbound.js";
import { events as e } from "./events.js";
import { ManualClock, settle } from "./manual-clock.js";

const thread: ThreadRef = { platform: "discord", workspace: "G1", channel: "C1", thread: "T1" };
const stats: RunStats = { turns: 1, toolCalls: 0, inputTokens: 100, outputTokens: 100_000 };
const CUT = /The answer was cut off here/;

function setup(limits: Partial<OutboundLimits> = {}, options: Partial<RunRendererOptions> = {}) {
  const chat = new MemoryOutbound({
    limits: { minEditIntervalMs: 1000, maxMessageChars: 2000, ...limits },
  });
  const clock = new ManualClock();
  const renderer = createRunRenderer({ outbound: chat, thread, clock, ...options });
  const feed = async (...list: AgentEvent[]) => {
    for (const event of list) renderer.handle(event);
    await settle();
  };
  const finish = async (outcome: Parameters<typeof renderer.finish>[0] = { kind: "completed" }) => {
    const done = renderer.finish(outcome, stats);
    await clock.advance(60_000);
    await done;
  };
  const posts = () => chat.ops.filter((op) => op.op === "post" && op.error === undefined).length;
  return { chat, clock, renderer, feed, finish, posts };
}

/** Streams `chunks` paragraphs of about 400 characters, the clock moving 50 ms per chunk. */
async function stream(s: ReturnType<typeof setup>, chunks: number, from = 0): Promise<void> {
  for (let i = from; i < from + chunks; i++) {
    await s.feed(e.text(`Paragraph ${i}: ${"lorem ipsum dolor sit amet ".repeat(14)}\n\n`));
    await s.clock.advance(50);
  }
}

describe("a run's reply is bounded", () => {
  it("posts at most the configured number of messages for an endless stream and says once that it was cut", async () => {
    const s = setup();
    await s.feed(e.turnStart(), e.assistantStart());
    // About 1.2 MB of answer: unbounded, this was ~600 Discord messages.
    await stream(s, 3_000);
    const postsAtCut = s.posts();
    await stream(s, 500, 3_000);
    expect(s.posts()).toBe(postsAtCut); // nothing more is posted after the cut
    await s.feed(e.assistantEnd("length"));
    await s.finish();

    const texts = s.chat.texts(thread);
    expect(texts.length).toBeLessThanOrEqual(DEFAULT_REPLY_MAX_MESSAGES);
    expect(s.posts()).toBeLessThanOrEqual(DEFAULT_REPLY_MAX_MESSAGES);
    expect(texts.filter((text) => CUT.test(text))).toHaveLength(1);
    const notice = texts.at(-1)!;
    expect(notice).toMatch(CUT);
    expect(notice).toContain("20 messages or 40,000 characters");
    // The footer closes the reply, below the notice.
    expect(notice).toMatch(/-# 1 turn · .*tokens$/);
    // What was shown is the start of the answer, within the character cap.
    expect(texts[0]).toMatch(/^Paragraph 0: /);
    const shown = texts.slice(0, -1).join("\n\n");
    expect(shown.length).toBeLessThanOrEqual(40_000 + 2 * texts.length);
    expect(shown).not.toContain("Paragraph 3000");
  });

  it("cuts off by message count too, keeping the last message for the notice", async () => {
    const s = setup({ maxMessageChars: 500 }, { maxMessages: 4, maxAnswerChars: 1_000_000 });
    await s.feed(e.turnStart(), e.assistantStart());
    await stream(s, 40);
    await s.feed(e.assistantEnd(), e.toolStart("t1", "search"), e.toolEnd("t1", "search"));
    await s.finish({ kind: "stopped", by: { id: "U1", name: "Ada" } });
    const texts = s.chat.texts(thread);
    expect(texts).toHaveLength(4);
    expect(texts.slice(0, 3).every((text) => text.startsWith("Paragraph ") && !CUT.test(text))).toBe(true);
    expect(texts[3]).toMatch(CUT);
    expect(texts[3]).toContain("(4 messages or 1,000,000 characters)");
    expect(texts[3]).toContain("🛑 Stopped by Ada.");
    // Tool lines after the cut are not shown.
    expect(texts.join("\n")).not.toContain("search");
  });

  it("shows a model failure that happens after the cut in the notice message", async () => {
    const s = setup({}, { maxAnswerChars: 3_000, footer: false });
    await s.feed(e.turnStart(), e.assistantStart());
    await stream(s, 10);
    await s.feed(e.assistantEnd("error", "The model provider is rate-limiting us."));
    await s.finish({ kind: "failed", message: "The model provider is rate-limiting us." });
    const texts = s.chat.texts(thread);
    expect(texts.join("").length).toBeLessThan(3_000 + 1_000);
    const notice = texts.at(-1)!;
    expect(notice).toMatch(CUT);
    // Said once, although the run's outcome repeats it.
    expect(notice.split("rate-limiting").length - 1).toBe(1);
  });

  it("cuts a final text that arrives whole (no deltas) at the character cap", async () => {
    const s = setup({}, { maxAnswerChars: 5_000 });
    await s.feed(e.turnStart(), e.assistantStart(), e.textEnd("word ".repeat(100_000)), e.assistantEnd());
    await s.finish();
    const texts = s.chat.texts(thread);
    expect(texts.length).toBeLessThanOrEqual(5);
    expect(texts.slice(0, -1).join("").length).toBeLessThanOrEqual(5_000);
    expect(texts.at(-1)).toMatch(CUT);
  });

  it("leaves a reply within the limits alone", async () => {
    const s = setup({}, { maxMessages: 3, maxAnswerChars: 2_000 });
    await s.feed(e.turnStart(), e.assistantStart(), e.text("x".repeat(1_990)), e.assistantEnd());
    await s.finish();
    const texts = s.chat.texts(thread);
    expect(texts).toHaveLength(2);
    expect(texts.join("\n")).not.toMatch(CUT);
  });
});
