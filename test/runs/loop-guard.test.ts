import { afterEach, describe, expect, it } from "vitest";
import type { Message, ToolResultMessage } from "../../src/agent/index.js";
import type { RunsConfig } from "../../src/runs/index.js";
import type { ScriptedResponse } from "../fakes/scripted-model.js";
import { instantTool, RunsHarness } from "./harness.js";

let h: RunsHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const toolResults = (messages: Message[]) =>
  messages.filter((m): m is ToolResultMessage => m.role === "toolResult");
const resultText = (m: ToolResultMessage) => m.content.map((b) => (b.type === "text" ? b.text : "")).join("");

/** Runs one mention against a model that keeps answering with `response`; returns the harness's view. */
async function runForever(
  response: (n: number) => ScriptedResponse,
  loopGuard: Partial<RunsConfig["loopGuard"]>,
) {
  const lookup = instantTool("lookup");
  h = await new RunsHarness({
    tools: [lookup.tool],
    config: { loopGuard: loopGuard as RunsConfig["loopGuard"] },
  }).start();
  let n = 0;
  h.model.fallback = () => response(n++);
  const thread = h.thread();
  await h.runFinished(await h.mention(thread, "look it up"));
  const transcript = (await h.transcript(thread)) as Message[];
  return { lookup, thread, transcript, chat: h.chat.texts(thread).join("\n"), requests: h.model.requests };
}

describe("loop guard: the same call with the same arguments", () => {
  it("refuses the Nth identical call with a result saying so, then stops the run at the next one", async () => {
    const { lookup, transcript, chat, requests } = await runForever(
      (n) => ({ toolCalls: [{ id: `c${n}`, name: "lookup", arguments: { value: "x" } }] }),
      { maxRepeats: 3 },
    );
    // Calls 1 and 2 ran; call 3 was refused (soft); call 4 stopped the run (hard): no fifth request.
    expect(lookup.calls).toHaveLength(2);
    expect(requests).toHaveLength(4);
    const seen = toolResults(requests[3]!.messages);
    expect(seen).toHaveLength(3);
    expect(seen[2]!.isError).toBe(true);
    expect(resultText(seen[2]!)).toMatch(/repeating yourself/);
    const results = toolResults(transcript);
    expect(resultText(results.at(-1)!)).toMatch(/run stops here/);
    expect(chat).toContain("⚠️ Stopped: the model kept calling lookup with the same arguments.");
  });

  it("counts each distinct set of arguments on its own and refuses only the repeated one", async () => {
    const args = ["a", "b", "a", "b", "a"].map((value) => ({ value }));
    const { lookup, requests, chat } = await runForever(
      (n) =>
        n < args.length
          ? { toolCalls: [{ id: `c${n}`, name: "lookup", arguments: args[n]! }] }
          : { text: "done" },
      { maxRepeats: 3 },
    );
    // a, b, a, b ran; the third "a" was refused; the model then answered and the run ended normally.
    expect(lookup.calls).toEqual([{ value: "a" }, { value: "b" }, { value: "a" }, { value: "b" }]);
    expect(requests).toHaveLength(6);
    expect(resultText(toolResults(requests[5]!.messages).at(-1)!)).toMatch(/repeating yourself/);
    expect(chat).not.toContain("Stopped");
  });
});

describe("loop guard: tool-call caps", () => {
  it("refuses calls past the per-turn cap, then stops when the model does it again", async () => {
    const { lookup, requests, chat } = await runForever(
      (n) => ({
        toolCalls: [1, 2, 3].map((i) => ({
          id: `c${n}-${i}`,
          name: "lookup",
          arguments: { value: `${n}-${i}` },
        })),
      }),
      { maxToolCallsPerTurn: 2 },
    );
    // Two of three ran in each of the two turns; the second overflow stopped the run.
    expect(lookup.calls).toHaveLength(4);
    expect(requests).toHaveLength(2);
    expect(chat).toContain("⚠️ Stopped: the model kept making more than 2 tool calls in one response.");
  });

  it("refuses calls past the per-run cap with a result the model reads, then stops", async () => {
    const { lookup, requests, chat } = await runForever(
      (n) => ({ toolCalls: [{ id: `c${n}`, name: "lookup", arguments: { value: String(n) } }] }),
      { maxToolCallsPerRun: 3 },
    );
    expect(lookup.calls).toHaveLength(3);
    expect(requests).toHaveLength(5);
    const refused = toolResults(requests[4]!.messages).at(-1)!;
    expect(resultText(refused)).toMatch(/limit of 3 tool calls/);
    expect(chat).toContain("⚠️ Stopped: the run kept calling tools after its limit of 3 tool calls.");
  });

  it("lets a run that recovers after the warning finish normally", async () => {
    const { lookup, requests, chat } = await runForever(
      (n) =>
        n < 3
          ? { toolCalls: [{ id: `c${n}`, name: "lookup", arguments: { value: "same" } }] }
          : { text: "Here is the answer." },
      { maxRepeats: 3 },
    );
    expect(lookup.calls).toHaveLength(2);
    expect(requests).toHaveLength(4);
    expect(chat).toContain("Here is the answer.");
    expect(chat).not.toContain("Stopped");
  });
});
