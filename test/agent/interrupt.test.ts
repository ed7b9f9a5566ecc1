import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  Agent,
  type AgentEvent,
  type AssistantMessage,
  InterruptLatch,
  type InterruptSource,
  runAgentLoop,
  type ToolResultMessage,
} from "../../src/agent/index.js";
import { ScriptedModel, TEST_MODEL } from "../fakes/scripted-model.js";
import { deferred } from "../support/async.js";
import {
  createTool,
  loopConfig,
  promptEvents,
  recordAgent,
  resultText,
  short,
  textReply,
  textResult,
  transcript,
  user,
  whenAborted,
} from "./helpers.js";

/** Deviation 6: interrupts abort the model request only; interruptible tools yield to steers and interrupts. */

const INTERRUPTED_TEXT = "Interrupted by a new message from Bob; the tool was stopped before it finished.";

function agentWith(model: ScriptedModel, tools: ReturnType<typeof createTool>[] = []) {
  const agent = new Agent({ initialState: { model: TEST_MODEL, tools }, streamFn: model.streamFn });
  return { agent, ...recordAgent(agent) };
}

/** Calls `action` once, on the first event whose short form is `when`. */
function onEvent(agent: Agent, when: string, action: () => void): void {
  let done = false;
  agent.subscribe((event) => {
    if (done || short(event) !== when) return;
    done = true;
    action();
  });
}

function messageEnds(events: AgentEvent[]): AssistantMessage[] {
  return events.flatMap((event) =>
    event.type === "message_end" && (event.message as { role: string }).role === "assistant"
      ? [event.message as AssistantMessage]
      : [],
  );
}

describe("interrupt during a model stream", () => {
  it("aborts only that request, keeps the partial answer marked, and starts the next request with the message", async () => {
    let runLiveAtSecondRequest: boolean | undefined;
    const model = new ScriptedModel([
      { text: ["par", "tial"], hang: true },
      () => {
        runLiveAtSecondRequest = agentRef.signal?.aborted === false;
        return { text: "ok" };
      },
    ]);
    const { agent, shorts, events } = agentWith(model);
    const agentRef = agent;
    onEvent(agent, "message_update(text_delta)", () => agent.interrupt(user("wait"), { by: "Bob" }));
    await agent.prompt("go");

    expect(shorts).toEqual([
      "agent_start",
      "turn_start",
      ...promptEvents("go"),
      "message_start(assistant)",
      "message_update(text_start)",
      "message_update(text_delta)",
      "message_update(text_delta)",
      "message_update(text_end)",
      "message_end(assistant:aborted)",
      "turn_end()",
      "turn_start",
      ...promptEvents("wait"),
      ...textReply(),
      "turn_end()",
      "agent_end",
    ]);
    const [cut, answer] = messageEnds(events);
    expect(cut).toMatchObject({ stopReason: "aborted", interrupted: { by: "Bob" } });
    expect(answer?.interrupted).toBeUndefined();
    expect(model.requests[0]?.options.signal?.aborted).toBe(true);
    expect(runLiveAtSecondRequest).toBe(true);
    // The next request carries the cut answer and the message, in that order.
    expect(transcript(model.requests[1]!.messages)).toEqual(["user:go", "assistant:partial", "user:wait"]);
    expect(transcript(agent.state.messages)).toEqual([
      "user:go",
      "assistant:partial",
      "user:wait",
      "assistant:ok",
    ]);
    expect(agent.state.errorMessage).toBe("Request was aborted");
    expect(agent.hasQueuedMessages()).toBe(false);
  });

  it("gives the cut answer's tool calls `Operation aborted` results; none of them runs", async () => {
    const echo = createTool("echo");
    const model = new ScriptedModel([
      { toolCalls: [{ id: "c1", name: "echo", arguments: { text: "a" } }], hang: true },
      { text: "ok" },
    ]);
    const { agent, shorts } = agentWith(model, [echo]);
    onEvent(agent, "message_update(toolcall_end)", () => agent.interrupt(user("wait")));
    await agent.prompt("go");

    expect(shorts.slice(shorts.indexOf("message_end(assistant:aborted)"))).toEqual([
      "message_end(assistant:aborted)",
      "tool_execution_start(c1)",
      "tool_execution_end(c1:error)",
      "message_start(toolResult:c1:error)",
      "message_end(toolResult:c1:error)",
      "turn_end(c1)",
      "turn_start",
      ...promptEvents("wait"),
      ...textReply(),
      "turn_end()",
      "agent_end",
    ]);
    expect(echo.calls).toEqual([]);
    expect(transcript(model.requests[1]!.messages)).toEqual([
      "user:go",
      "assistant:[c1]",
      "toolResult:c1:error:Operation aborted",
      "user:wait",
    ]);
  });

  it("an abort of the run is not an interrupt: the run ends and nothing is marked", async () => {
    const model = new ScriptedModel([{ text: "par", hang: true }]);
    const { agent, events } = agentWith(model);
    onEvent(agent, "message_update(text_delta)", () => agent.abort());
    await agent.prompt("go");
    expect(messageEnds(events).map((m) => [m.stopReason, m.interrupted])).toEqual([["aborted", undefined]]);
    expect(events.at(-1)?.type).toBe("agent_end");
  });
});

describe("interrupt and steer while tools run", () => {
  it("a tool that is not interruptible runs on; the interrupt is delivered after the batch", async () => {
    const gate = deferred();
    let toolSignal: AbortSignal | undefined;
    const slow = createTool("slow", async (_id, _params, signal) => {
      toolSignal = signal;
      agent.interrupt(user("wait"), { by: "Bob" });
      await gate.promise;
      return textResult("slow done");
    });
    const model = new ScriptedModel([
      { toolCalls: [{ id: "t1", name: "slow", arguments: {} }] },
      { text: "ok" },
    ]);
    const { agent, shorts } = agentWith(model, [slow]);
    onEvent(agent, "tool_execution_start(t1)", () => setImmediate(() => gate.resolve()));
    await agent.prompt("go");

    expect(shorts.slice(shorts.indexOf("tool_execution_start(t1)"))).toEqual([
      "tool_execution_start(t1)",
      "tool_execution_end(t1)",
      "message_start(toolResult:t1)",
      "message_end(toolResult:t1)",
      "turn_end(t1)",
      "turn_start",
      ...promptEvents("wait"),
      ...textReply(),
      "turn_end()",
      "agent_end",
    ]);
    expect(toolSignal?.aborted).toBe(false);
    expect(transcript(model.requests[1]!.messages).slice(-2)).toEqual([
      "toolResult:t1:slow done",
      "user:wait",
    ]);
  });

  it("an interruptible tool is aborted by a steer, with a result naming who sent it", async () => {
    let reason: unknown;
    const wait = createTool("wait_for", async (_id, _params, signal) => {
      agent.steer(user("faster please"), { by: "Bob" });
      await whenAborted(signal);
      reason = signal?.reason;
      throw new Error("aborted");
    });
    wait.interruptible = true;
    const model = new ScriptedModel([
      { toolCalls: [{ id: "t1", name: "wait_for", arguments: {} }] },
      { text: "ok" },
    ]);
    const { agent, shorts, events } = agentWith(model, [wait]);
    await agent.prompt("go");

    expect(shorts.slice(shorts.indexOf("tool_execution_start(t1)"))).toEqual([
      "tool_execution_start(t1)",
      "tool_execution_end(t1:error)",
      "message_start(toolResult:t1:error)",
      "message_end(toolResult:t1:error)",
      "turn_end(t1)",
      "turn_start",
      ...promptEvents("faster please"),
      ...textReply(),
      "turn_end()",
      "agent_end",
    ]);
    expect(reason).toEqual({ by: "Bob" });
    const result = events.find(
      (event): event is Extract<AgentEvent, { type: "message_end" }> =>
        event.type === "message_end" && (event.message as { role: string }).role === "toolResult",
    )?.message as ToolResultMessage;
    expect(resultText(result)).toBe(INTERRUPTED_TEXT);
    expect(agent.signal).toBeUndefined();
  });

  it("an interruptible tool later in a sequential batch does not start once a message waits", async () => {
    const first = createTool("first", async () => {
      agent.interrupt(user("wait"), { by: "Bob" });
      return textResult("first done");
    });
    const second = createTool("second", async () => textResult("second done"), {
      executionMode: "sequential",
    });
    second.interruptible = true;
    const model = new ScriptedModel([
      {
        toolCalls: [
          { id: "t1", name: "first", arguments: {} },
          { id: "t2", name: "second", arguments: {} },
        ],
      },
      { text: "ok" },
    ]);
    const { agent } = agentWith(model, [first, second]);
    await agent.prompt("go");

    expect(second.calls).toEqual([]);
    expect(transcript(model.requests[1]!.messages).slice(-3)).toEqual([
      "toolResult:t1:first done",
      `toolResult:t2:error:${INTERRUPTED_TEXT}`,
      "user:wait",
    ]);
  });

  it("a tool that ignores the abort and returns keeps its result", async () => {
    const stubborn = createTool("stubborn", async () => {
      agent.steer(user("more"));
      await Promise.resolve();
      return textResult("finished anyway");
    });
    stubborn.interruptible = true;
    const model = new ScriptedModel([
      { toolCalls: [{ id: "t1", name: "stubborn", arguments: {} }] },
      { text: "ok" },
    ]);
    const { agent } = agentWith(model, [stubborn]);
    await agent.prompt("go");
    expect(transcript(model.requests[1]!.messages).slice(-2)).toEqual([
      "toolResult:t1:finished anyway",
      "user:more",
    ]);
  });
});

describe("the low-level loop's interrupt source", () => {
  it("an interrupt waiting when the run starts is injected before the first request, which is not aborted", async () => {
    const waiting = [user("early")];
    const latch = new InterruptLatch(() => waiting.length > 0);
    latch.interrupt({ by: "Bob" });
    const interrupts: InterruptSource = {
      signal: (phase) => latch.signal(phase),
      take: async () => waiting.splice(0),
    };
    const model = new ScriptedModel([{ text: "ok" }]);
    const shorts: string[] = [];
    const tool = createTool("noop", async () => textResult("x"), { parameters: z.object({}) });
    await runAgentLoop(
      [user("go")],
      { systemPrompt: "", messages: [], tools: [tool] },
      loopConfig({ interrupts }),
      (event) => {
        shorts.push(short(event));
      },
      undefined,
      model.streamFn,
    );
    expect(shorts).toEqual([
      "agent_start",
      "turn_start",
      ...promptEvents("go"),
      ...promptEvents("early"),
      ...textReply(),
      "turn_end()",
      "agent_end",
    ]);
    expect(model.requests).toHaveLength(1);
    expect(model.requests[0]?.options.signal?.aborted).toBe(false);
  });
});
