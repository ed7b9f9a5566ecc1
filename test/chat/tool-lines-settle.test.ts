import { describe, expect, it } from "vitest";
import type { AgentEvent, ToolResultMessage } from "../../src/agent/index.js";
import { createRunRenderer, type RunOutcome, type ThreadRef } from "../../src/chat/index.js";
import { INTERRUPTED_TOOL_TEXT } from "../../src/runs/recovery.js";
import { MemoryOutbound } from "../fakes/memory-outbound.js";
import { events as e } from "./events.js";
import { ManualClock, settle } from "./manual-clock.js";

const thread: ThreadRef = { platform: "discord", workspace: "G1", channel: "C1", thread: "T1" };
const stats = { turns: 1, toolCalls: 1, inputTokens: 0, outputTokens: 0 };

function setup() {
  const chat = new MemoryOutbound({
    limits: { minEditIntervalMs: 0, maxMessageChars: 4000 },
  });
  const clock = new ManualClock();
  const renderer = createRunRenderer({ outbound: chat, thread, footer: false, clock });
  const feed = async (...list: AgentEvent[]) => {
    for (const event of list) renderer.handle(event);
    await settle();
  };
  const finish = async (outcome: RunOutcome) => {
    const done = renderer.finish(outcome, stats);
    await clock.advance(10_000);
    await done;
  };
  return { chat, feed, finish };
}

/** A tool result as the recovery of a resumed run emits it (message_start / message_end, no execution). */
function recovered(toolCallId: string, toolName: string, text: string, isError: boolean): AgentEvent[] {
  const message: ToolResultMessage = {
    role: "toolResult",
    toolCallId,
    toolName,
    content: [{ type: "text", text }],
    details: {},
    isError,
    timestamp: 0,
  };
  return [
    { type: "message_start", message },
    { type: "message_end", message },
  ];
}

describe("tool progress lines never stay 'running'", () => {
  it("a worker that hands the run over finalizes the lines of tools still running", async () => {
    const { chat, feed, finish } = setup();
    await feed(e.turnStart(), e.assistantStart(), e.assistantEnd("toolUse"), e.toolStart("a", "deploy"));
    expect(chat.texts(thread)).toEqual(["🔧 deploy …"]);
    await finish({
      kind: "stopped",
      by: undefined,
      reason: "The worker running this request stopped; it will resume.",
    });
    const [text] = chat.texts(thread);
    expect(text).toMatch(/^🔧 deploy ✗ interrupted\n\n/);
    expect(text).not.toContain("…");
  });

  it("a run stopped by a person says the running tool was stopped", async () => {
    const { chat, feed, finish } = setup();
    await feed(e.turnStart(), e.assistantStart(), e.assistantEnd("toolUse"), e.toolStart("a", "deploy"));
    await finish({ kind: "stopped", by: { id: "U1", name: "Ana" } });
    expect(chat.texts(thread)[0]).toMatch(/^🔧 deploy ✗ stopped\n\n/);
  });

  it("a resumed run shows what became of the previous worker's calls, once, without a duration", async () => {
    const { chat, feed, finish } = setup();
    await feed(
      ...recovered("a", "deploy", INTERRUPTED_TOOL_TEXT, true),
      ...recovered("b", "lookup", "42", false),
      e.turnStart(),
      e.assistantStart(),
      e.text("Deploy may not have run; checking."),
      e.assistantEnd(),
    );
    await finish({ kind: "completed" });
    expect(chat.texts(thread)).toEqual([
      "🔧 deploy ✗ Tool call was interrupted: the worker running it stopped before it finished, so it may or may not have taken effect.\n🔧 lookup ✓\n\nDeploy may not have run; checking.",
    ]);
  });

  it("results of calls this run executed add no second line", async () => {
    const { chat, feed, finish } = setup();
    await feed(
      e.turnStart(),
      e.assistantStart(),
      e.assistantEnd("toolUse"),
      e.toolStart("a", "lookup"),
      e.toolEnd("a", "lookup", { durationMs: 1200 }),
      ...recovered("a", "lookup", "ok", false),
    );
    await finish({ kind: "completed" });
    expect(chat.texts(thread)).toEqual(["🔧 lookup ✓ 1.2s"]);
  });
});
