import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  Agent,
  type AgentEvent,
  type AgentOptions,
  type AnyAgentTool,
  type ToolExecutionMode,
} from "../../src/agent/index.js";
import { ScriptedModel, TEST_MODEL } from "../fakes/scripted-model.js";
import { type Deferred, deferred } from "../support/async.js";
import {
  createTool,
  promptEvents,
  recordAgent,
  resultText,
  textReply,
  textResult,
  toolCallReply,
  transcript,
} from "./helpers.js";

/** Gates the test opens to release A, B and F; pre-opened gates make every tool run straight through. */
interface BatchGates {
  a: Deferred;
  b: Deferred;
  f: Deferred;
}

const VALIDATION_TEXT_D = [
  'Validation failed for tool "count":',
  "  - count: Invalid input: expected number, received string",
  "",
  "Received arguments:",
  "{",
  '  "count": "abc",',
  '  "extra": true',
  "}",
].join("\n");

/**
 * The §3 batch: A slow, B fast, C unknown tool, D invalid arguments, E blocked by beforeToolCall,
 * F emits an update, waits, emits another and throws.
 */
function mixedBatch(gates: BatchGates, options: { serialMode?: ToolExecutionMode } = {}) {
  const slow = createTool("slow", async () => {
    await gates.a.promise;
    return textResult("A done");
  });
  const fast = createTool("fast", async () => {
    await gates.b.promise;
    return textResult("B done");
  });
  const count = createTool("count", async (_id, params) => textResult(`count=${String(params.count)}`), {
    parameters: z.object({ count: z.number() }),
  });
  const guarded = createTool("guarded", async () => textResult("E ran"));
  const flaky = createTool(
    "flaky",
    async (_id, _params, _signal, onUpdate) => {
      onUpdate?.(textResult("F 1/2"));
      await gates.f.promise;
      onUpdate?.(textResult("F 2/2"));
      throw new Error("F failed");
    },
    options.serialMode ? { executionMode: options.serialMode } : {},
  );
  const tools: AnyAgentTool[] = [slow, fast, count, guarded, flaky];
  const toolCalls = [
    { id: "A", name: "slow", arguments: {} },
    { id: "B", name: "fast", arguments: {} },
    { id: "C", name: "missing", arguments: { q: 1 } },
    { id: "D", name: "count", arguments: { count: "abc", extra: true } },
    { id: "E", name: "guarded", arguments: {} },
    { id: "F", name: "flaky", arguments: {} },
  ];
  const beforeCalls: string[] = [];
  const beforeToolCall: NonNullable<AgentOptions["beforeToolCall"]> = ({ toolCall }) => {
    beforeCalls.push(toolCall.id);
    return toolCall.id === "E" ? { block: true, reason: "E is not allowed" } : undefined;
  };
  return { tools, toolCalls, beforeToolCall, beforeCalls, executed: { slow, fast, count, guarded, flaky } };
}

function openGates(): BatchGates {
  const gates = { a: deferred(), b: deferred(), f: deferred() };
  gates.a.resolve();
  gates.b.resolve();
  gates.f.resolve();
  return gates;
}

const RESULT_MESSAGES = [
  "message_start(toolResult:A)",
  "message_end(toolResult:A)",
  "message_start(toolResult:B)",
  "message_end(toolResult:B)",
  "message_start(toolResult:C:error)",
  "message_end(toolResult:C:error)",
  "message_start(toolResult:D:error)",
  "message_end(toolResult:D:error)",
  "message_start(toolResult:E:error)",
  "message_end(toolResult:E:error)",
  "message_start(toolResult:F:error)",
  "message_end(toolResult:F:error)",
];

const EXPECTED_TRANSCRIPT = [
  "user:go",
  "assistant:[A,B,C,D,E,F]",
  "toolResult:A:A done",
  "toolResult:B:B done",
  "toolResult:C:error:Tool missing not found",
  `toolResult:D:error:${VALIDATION_TEXT_D}`,
  "toolResult:E:error:E is not allowed",
  "toolResult:F:error:F failed",
];

/** The whole run around the batch's tool events: prompt, tool-call reply, batch, text reply. */
function wholeRun(batchEvents: string[]): string[] {
  return [
    "agent_start",
    "turn_start",
    ...promptEvents("go"),
    ...toolCallReply(6),
    ...batchEvents,
    "turn_start",
    ...textReply(),
    "turn_end()",
    "agent_end",
  ];
}

describe("parallel batch (§3)", () => {
  it("starts and fails calls during preflight, ends executed calls in completion order, results in call order", async () => {
    const gates = { a: deferred(), b: deferred(), f: deferred() };
    const batch = mixedBatch(gates);
    const model = new ScriptedModel([{ toolCalls: batch.toolCalls }, { text: "summary" }]);
    const agent = new Agent({
      initialState: { model: TEST_MODEL, tools: batch.tools },
      streamFn: model.streamFn,
      beforeToolCall: batch.beforeToolCall,
    });
    const { events, shorts } = recordAgent(agent);
    // Drive completion order from the events themselves: F's first update releases B, B's end
    // releases F, F's end releases A. No timers are involved.
    let updatesOfF = 0;
    agent.subscribe((event) => {
      if (event.type === "tool_execution_update" && event.toolCallId === "F" && ++updatesOfF === 1) {
        gates.b.resolve();
      }
      if (event.type === "tool_execution_end" && event.toolCallId === "B") gates.f.resolve();
      if (event.type === "tool_execution_end" && event.toolCallId === "F") gates.a.resolve();
    });

    await agent.prompt("go");

    expect(shorts).toEqual(
      wholeRun([
        "tool_execution_start(A)",
        "tool_execution_start(B)",
        "tool_execution_start(C)",
        "tool_execution_end(C:error)",
        "tool_execution_start(D)",
        "tool_execution_end(D:error)",
        "tool_execution_start(E)",
        "tool_execution_end(E:error)",
        "tool_execution_start(F)",
        "tool_execution_update(F)",
        "tool_execution_end(B)",
        "tool_execution_update(F)",
        "tool_execution_end(F:error)",
        "tool_execution_end(A)",
        ...RESULT_MESSAGES,
        "turn_end(A,B,C,D,E,F)",
      ]),
    );

    // Hooks and execution: beforeToolCall runs in call order only for calls that passed lookup and
    // validation; blocked, unknown and invalid calls never execute.
    expect(batch.beforeCalls).toEqual(["A", "B", "E", "F"]);
    expect(batch.executed.count.calls).toEqual([]);
    expect(batch.executed.guarded.calls).toEqual([]);

    const ends = new Map(
      events.flatMap((event) => (event.type === "tool_execution_end" ? [[event.toolCallId, event]] : [])),
    );
    expect(resultText(ends.get("C")!.result)).toBe("Tool missing not found");
    expect(resultText(ends.get("D")!.result)).toBe(VALIDATION_TEXT_D);
    expect(resultText(ends.get("E")!.result)).toBe("E is not allowed");
    expect(resultText(ends.get("F")!.result)).toBe("F failed");
    for (const id of ["C", "D", "E", "F"]) expect(ends.get(id)!.result.details).toEqual({});
    const updates = events.filter(
      (event): event is Extract<AgentEvent, { type: "tool_execution_update" }> =>
        event.type === "tool_execution_update",
    );
    expect(updates.map((event) => resultText(event.partialResult))).toEqual(["F 1/2", "F 2/2"]);

    expect(transcript(model.requests[1]?.messages ?? [])).toEqual(EXPECTED_TRANSCRIPT);
    expect(transcript(agent.state.messages)).toEqual([...EXPECTED_TRANSCRIPT, "assistant:summary"]);
  });
});

describe("sequential batch", () => {
  const SEQUENTIAL_ORDER = [
    "tool_execution_start(A)",
    "tool_execution_end(A)",
    "message_start(toolResult:A)",
    "message_end(toolResult:A)",
    "tool_execution_start(B)",
    "tool_execution_end(B)",
    "message_start(toolResult:B)",
    "message_end(toolResult:B)",
    "tool_execution_start(C)",
    "tool_execution_end(C:error)",
    "message_start(toolResult:C:error)",
    "message_end(toolResult:C:error)",
    "tool_execution_start(D)",
    "tool_execution_end(D:error)",
    "message_start(toolResult:D:error)",
    "message_end(toolResult:D:error)",
    "tool_execution_start(E)",
    "tool_execution_end(E:error)",
    "message_start(toolResult:E:error)",
    "message_end(toolResult:E:error)",
    "tool_execution_start(F)",
    "tool_execution_update(F)",
    "tool_execution_update(F)",
    "tool_execution_end(F:error)",
    "message_start(toolResult:F:error)",
    "message_end(toolResult:F:error)",
    "turn_end(A,B,C,D,E,F)",
  ];

  it('runs each call start-to-result in call order with toolExecution: "sequential"', async () => {
    const batch = mixedBatch(openGates());
    const model = new ScriptedModel([{ toolCalls: batch.toolCalls }, { text: "summary" }]);
    const agent = new Agent({
      initialState: { model: TEST_MODEL, tools: batch.tools },
      streamFn: model.streamFn,
      beforeToolCall: batch.beforeToolCall,
      toolExecution: "sequential",
    });
    const { shorts } = recordAgent(agent);
    await agent.prompt("go");
    expect(shorts).toEqual(wholeRun(SEQUENTIAL_ORDER));
    expect(transcript(model.requests[1]?.messages ?? [])).toEqual(EXPECTED_TRANSCRIPT);
  });

  it('makes the whole batch sequential when one called tool has executionMode: "sequential"', async () => {
    const batch = mixedBatch(openGates(), { serialMode: "sequential" });
    const model = new ScriptedModel([{ toolCalls: batch.toolCalls }, { text: "summary" }]);
    const agent = new Agent({
      initialState: { model: TEST_MODEL, tools: batch.tools },
      streamFn: model.streamFn,
      beforeToolCall: batch.beforeToolCall,
    });
    const { shorts } = recordAgent(agent);
    await agent.prompt("go");
    expect(shorts).toEqual(wholeRun(SEQUENTIAL_ORDER));
    expect(transcript(agent.state.messages)).toEqual([...EXPECTED_TRANSCRIPT, "assistant:summary"]);
  });

  it('a sequential tool that is not called leaves the batch parallel; executionMode "parallel" does too', async () => {
    const batch = mixedBatch(openGates(), { serialMode: "parallel" });
    const unusedSerial = createTool("serial", undefined, { executionMode: "sequential" });
    const calls = batch.toolCalls.filter((call) => call.id === "A" || call.id === "B");
    const model = new ScriptedModel([{ toolCalls: calls }, { text: "summary" }]);
    const agent = new Agent({
      initialState: { model: TEST_MODEL, tools: [...batch.tools, unusedSerial] },
      streamFn: model.streamFn,
    });
    const { shorts } = recordAgent(agent);
    await agent.prompt("go");
    expect(shorts).toEqual([
      "agent_start",
      "turn_start",
      ...promptEvents("go"),
      ...toolCallReply(2),
      "tool_execution_start(A)",
      "tool_execution_start(B)",
      "tool_execution_end(A)",
      "tool_execution_end(B)",
      "message_start(toolResult:A)",
      "message_end(toolResult:A)",
      "message_start(toolResult:B)",
      "message_end(toolResult:B)",
      "turn_end(A,B)",
      "turn_start",
      ...textReply(),
      "turn_end()",
      "agent_end",
    ]);
  });
});
