import { describe, expect, it } from "vitest";
import {
  Agent,
  type AgentMessage,
  type AssistantMessage,
  runAgentLoop,
  type ToolResultMessage,
} from "../../src/agent/index.js";
import { ScriptedModel, TEST_MODEL, zeroUsage } from "../fakes/scripted-model.js";
import { deferred } from "../support/async.js";
import {
  createTool,
  loopConfig,
  promptEvents,
  recordAgent,
  short,
  textReply,
  toolCallReply,
  transcript,
  user,
  whenAborted,
} from "./helpers.js";

/** The turn deviation 2 synthesizes instead of calling the model after an abort. */
const ABORTED_TURN = [
  "turn_start",
  "message_start(assistant)",
  "message_end(assistant:aborted)",
  "turn_end()",
  "agent_end",
];

/** Every tool call in the transcript has exactly one result (deviation 1). */
function expectNoOrphans(messages: readonly AgentMessage[]): void {
  const callIds = messages.flatMap((message) =>
    (message as { role: string }).role === "assistant"
      ? (message as AssistantMessage).content.flatMap((block) =>
          block.type === "toolCall" ? [block.id] : [],
        )
      : [],
  );
  const resultIds = messages.flatMap((message) =>
    (message as { role: string }).role === "toolResult" ? [(message as ToolResultMessage).toolCallId] : [],
  );
  expect(resultIds).toEqual(callIds);
}

function expectSynthesizedAbort(message: AgentMessage | undefined): void {
  expect(message).toMatchObject({
    role: "assistant",
    content: [{ type: "text", text: "" }],
    stopReason: "aborted",
    errorMessage: "Request was aborted",
    api: TEST_MODEL.api,
    provider: TEST_MODEL.provider,
    model: TEST_MODEL.id,
    usage: zeroUsage(),
  });
}

describe("abort during a parallel batch", () => {
  it("running tools end with their own errors, every call gets a result, and the model is not called again", async () => {
    const bRunning = deferred();
    const aEnded = deferred();
    const waiter = createTool("waiter", async (id, _params, signal) => {
      if (id === "B") bRunning.resolve();
      await whenAborted(signal);
      // B fails after A's end so the completion order is fixed by the test, not by the scheduler.
      if (id === "B") await aEnded.promise;
      throw new Error(`${id} stopped`);
    });
    const model = new ScriptedModel([
      {
        toolCalls: [
          { id: "A", name: "waiter", arguments: {} },
          { id: "B", name: "waiter", arguments: {} },
        ],
      },
      { text: "must not be requested" },
    ]);
    const agent = new Agent({
      initialState: { model: TEST_MODEL, tools: [waiter] },
      streamFn: model.streamFn,
    });
    const { shorts } = recordAgent(agent);
    agent.subscribe((event) => {
      if (event.type === "tool_execution_end" && event.toolCallId === "A") aEnded.resolve();
    });

    const run = agent.prompt("go");
    await bRunning.promise;
    agent.abort();
    await run;

    expect(shorts).toEqual([
      "agent_start",
      "turn_start",
      ...promptEvents("go"),
      ...toolCallReply(2),
      "tool_execution_start(A)",
      "tool_execution_start(B)",
      "tool_execution_end(A:error)",
      "tool_execution_end(B:error)",
      "message_start(toolResult:A:error)",
      "message_end(toolResult:A:error)",
      "message_start(toolResult:B:error)",
      "message_end(toolResult:B:error)",
      "turn_end(A,B)",
      ...ABORTED_TURN,
    ]);
    expect(model.requests).toHaveLength(1);
    expect(transcript(agent.state.messages)).toEqual([
      "user:go",
      "assistant:[A,B]",
      "toolResult:A:error:A stopped",
      "toolResult:B:error:B stopped",
      "assistant:",
    ]);
    expectSynthesizedAbort(agent.state.messages.at(-1));
    expectNoOrphans(agent.state.messages);
    expect(agent.state.errorMessage).toBe("Request was aborted");
    expect(agent.state.isStreaming).toBe(false);
  });

  it("calls not yet run end as Operation aborted without beforeToolCall or execute", async () => {
    const approvalRequested = deferred();
    const approval = deferred();
    const beforeCalls: string[] = [];
    const tool = createTool("work");
    const model = new ScriptedModel([
      {
        toolCalls: [
          { id: "A", name: "work", arguments: {} },
          { id: "B", name: "work", arguments: {} },
          { id: "C", name: "work", arguments: {} },
        ],
      },
    ]);
    const agent = new Agent({
      initialState: { model: TEST_MODEL, tools: [tool] },
      streamFn: model.streamFn,
      beforeToolCall: async ({ toolCall }) => {
        beforeCalls.push(toolCall.id);
        if (toolCall.id === "B") {
          approvalRequested.resolve();
          await approval.promise;
        }
        return undefined;
      },
    });
    const { shorts } = recordAgent(agent);

    const run = agent.prompt("go");
    await approvalRequested.promise;
    agent.abort();
    approval.resolve();
    await run;

    expect(shorts).toEqual([
      "agent_start",
      "turn_start",
      ...promptEvents("go"),
      ...toolCallReply(3),
      "tool_execution_start(A)",
      "tool_execution_start(B)",
      // B's approval was pending at the abort: it ends at once, before C's preparation (as pi does).
      "tool_execution_end(B:error)",
      "tool_execution_start(C)",
      "tool_execution_end(C:error)",
      "tool_execution_end(A:error)",
      "message_start(toolResult:A:error)",
      "message_end(toolResult:A:error)",
      "message_start(toolResult:B:error)",
      "message_end(toolResult:B:error)",
      "message_start(toolResult:C:error)",
      "message_end(toolResult:C:error)",
      "turn_end(A,B,C)",
      ...ABORTED_TURN,
    ]);
    expect(beforeCalls).toEqual(["A", "B"]);
    expect(tool.calls).toEqual([]);
    expect(model.requests).toHaveLength(1);
    expect(transcript(agent.state.messages)).toEqual([
      "user:go",
      "assistant:[A,B,C]",
      "toolResult:A:error:Operation aborted",
      "toolResult:B:error:Operation aborted",
      "toolResult:C:error:Operation aborted",
      "assistant:",
    ]);
    expectNoOrphans(agent.state.messages);
  });
  it("a call whose beforeToolCall was pending at the abort ends before the next call is prepared, even when the hook then lets it run", async () => {
    const approvalRequested = deferred();
    const approval = deferred();
    const beforeCalls: string[] = [];
    const tool = createTool("work");
    const model = new ScriptedModel([
      {
        toolCalls: [
          { id: "A", name: "work", arguments: {} },
          { id: "B", name: "work", arguments: {} },
          { id: "C", name: "work", arguments: {} },
        ],
      },
      { text: "must not be requested" },
    ]);
    const agent = new Agent({
      initialState: { model: TEST_MODEL, tools: [tool] },
      streamFn: model.streamFn,
      beforeToolCall: async ({ toolCall }) => {
        beforeCalls.push(toolCall.id);
        if (toolCall.id === "A") {
          approvalRequested.resolve();
          // An approval click that lands as the run is stopped: the hook allows the call.
          await approval.promise;
        }
        return undefined;
      },
    });
    const { shorts } = recordAgent(agent);

    const run = agent.prompt("go");
    await approvalRequested.promise;
    agent.abort();
    approval.resolve();
    await run;

    expect(shorts).toEqual([
      "agent_start",
      "turn_start",
      ...promptEvents("go"),
      ...toolCallReply(3),
      "tool_execution_start(A)",
      "tool_execution_end(A:error)",
      "tool_execution_start(B)",
      "tool_execution_end(B:error)",
      "tool_execution_start(C)",
      "tool_execution_end(C:error)",
      "message_start(toolResult:A:error)",
      "message_end(toolResult:A:error)",
      "message_start(toolResult:B:error)",
      "message_end(toolResult:B:error)",
      "message_start(toolResult:C:error)",
      "message_end(toolResult:C:error)",
      "turn_end(A,B,C)",
      ...ABORTED_TURN,
    ]);
    expect(beforeCalls).toEqual(["A"]);
    expect(tool.calls).toEqual([]);
    expect(model.requests).toHaveLength(1);
    expect(transcript(agent.state.messages)).toEqual([
      "user:go",
      "assistant:[A,B,C]",
      "toolResult:A:error:Operation aborted",
      "toolResult:B:error:Operation aborted",
      "toolResult:C:error:Operation aborted",
      "assistant:",
    ]);
    expectNoOrphans(agent.state.messages);
  });

  it("a call the hook blocks after the abort keeps the hook's reason and still ends before the next call", async () => {
    const approvalRequested = deferred();
    const tool = createTool("work");
    const model = new ScriptedModel([
      {
        toolCalls: [
          { id: "A", name: "work", arguments: {} },
          { id: "B", name: "work", arguments: {} },
        ],
      },
    ]);
    const agent = new Agent({
      initialState: { model: TEST_MODEL, tools: [tool] },
      streamFn: model.streamFn,
      beforeToolCall: async ({ toolCall }, signal) => {
        if (toolCall.id !== "A") return undefined;
        approvalRequested.resolve();
        await whenAborted(signal);
        return { block: true, reason: "Tool call denied by Ada." };
      },
    });
    const { shorts } = recordAgent(agent);

    const run = agent.prompt("go");
    await approvalRequested.promise;
    agent.abort();
    await run;

    expect(shorts.filter((event) => event.startsWith("tool_execution"))).toEqual([
      "tool_execution_start(A)",
      "tool_execution_end(A:error)",
      "tool_execution_start(B)",
      "tool_execution_end(B:error)",
    ]);
    expect(transcript(agent.state.messages).slice(2, 4)).toEqual([
      "toolResult:A:error:Tool call denied by Ada.",
      "toolResult:B:error:Operation aborted",
    ]);
    expect(tool.calls).toEqual([]);
  });
});

describe("abort during a sequential batch", () => {
  it("the running call ends with its error and every remaining call gets start, end and an Operation aborted result", async () => {
    const aRunning = deferred();
    const beforeCalls: string[] = [];
    const tool = createTool("work", async (id, _params, signal) => {
      aRunning.resolve();
      await whenAborted(signal);
      throw new Error(`${id} stopped`);
    });
    const model = new ScriptedModel([
      {
        toolCalls: [
          { id: "A", name: "work", arguments: {} },
          { id: "B", name: "work", arguments: {} },
          { id: "C", name: "work", arguments: {} },
        ],
      },
    ]);
    const agent = new Agent({
      initialState: { model: TEST_MODEL, tools: [tool] },
      streamFn: model.streamFn,
      toolExecution: "sequential",
      beforeToolCall: ({ toolCall }) => {
        beforeCalls.push(toolCall.id);
        return undefined;
      },
    });
    const { shorts } = recordAgent(agent);

    const run = agent.prompt("go");
    await aRunning.promise;
    agent.abort();
    await run;

    expect(shorts).toEqual([
      "agent_start",
      "turn_start",
      ...promptEvents("go"),
      ...toolCallReply(3),
      "tool_execution_start(A)",
      "tool_execution_end(A:error)",
      "message_start(toolResult:A:error)",
      "message_end(toolResult:A:error)",
      "tool_execution_start(B)",
      "tool_execution_end(B:error)",
      "message_start(toolResult:B:error)",
      "message_end(toolResult:B:error)",
      "tool_execution_start(C)",
      "tool_execution_end(C:error)",
      "message_start(toolResult:C:error)",
      "message_end(toolResult:C:error)",
      "turn_end(A,B,C)",
      ...ABORTED_TURN,
    ]);
    expect(beforeCalls).toEqual(["A"]);
    expect(tool.calls.map((call) => call.id)).toEqual(["A"]);
    expect(model.requests).toHaveLength(1);
    expect(transcript(agent.state.messages)).toEqual([
      "user:go",
      "assistant:[A,B,C]",
      "toolResult:A:error:A stopped",
      "toolResult:B:error:Operation aborted",
      "toolResult:C:error:Operation aborted",
      "assistant:",
    ]);
    expectNoOrphans(agent.state.messages);
    expectSynthesizedAbort(agent.state.messages.at(-1));
  });
});

describe("no model request after abort (deviation 2)", () => {
  it("a steer queued at message_end followed by abort() is injected, then the aborted turn is synthesized", async () => {
    const model = new ScriptedModel([{ text: "first" }, { text: "must not be requested" }]);
    const agent = new Agent({ initialState: { model: TEST_MODEL }, streamFn: model.streamFn });
    const { shorts } = recordAgent(agent);
    let done = false;
    agent.subscribe((event) => {
      if (event.type === "message_end" && (event.message as { role: string }).role === "assistant" && !done) {
        done = true;
        agent.steer(user("S1"));
        agent.abort();
      }
    });

    await agent.prompt("go");

    expect(shorts).toEqual([
      "agent_start",
      "turn_start",
      ...promptEvents("go"),
      ...textReply(),
      "turn_end()",
      "turn_start",
      ...promptEvents("S1"),
      "message_start(assistant)",
      "message_end(assistant:aborted)",
      "turn_end()",
      "agent_end",
    ]);
    expect(model.requests).toHaveLength(1);
    expect(transcript(agent.state.messages)).toEqual(["user:go", "assistant:first", "user:S1", "assistant:"]);
    expect(agent.hasQueuedMessages()).toBe(false);
    expect(agent.state.errorMessage).toBe("Request was aborted");
  });

  it("an abort while the request is being prepared (transformContext) still prevents the request", async () => {
    const model = new ScriptedModel([{ text: "must not be requested" }]);
    const agent = new Agent({
      initialState: { model: TEST_MODEL },
      streamFn: model.streamFn,
      transformContext: async (messages) => {
        agent.abort();
        return messages;
      },
    });
    const { shorts } = recordAgent(agent);
    await agent.prompt("go");
    expect(shorts).toEqual([
      "agent_start",
      "turn_start",
      ...promptEvents("go"),
      "message_start(assistant)",
      "message_end(assistant:aborted)",
      "turn_end()",
      "agent_end",
    ]);
    expect(model.requests).toHaveLength(0);
    expectSynthesizedAbort(agent.state.messages.at(-1));
  });

  it("runAgentLoop with an already aborted signal never calls the stream function", async () => {
    const model = new ScriptedModel([{ text: "must not be requested" }]);
    const controller = new AbortController();
    controller.abort();
    const events: string[] = [];
    const messages = await runAgentLoop(
      [user("go")],
      { systemPrompt: "", messages: [] },
      loopConfig(),
      (event) => {
        events.push(short(event));
      },
      controller.signal,
      model.streamFn,
    );
    expect(events).toEqual([
      "agent_start",
      "turn_start",
      ...promptEvents("go"),
      "message_start(assistant)",
      "message_end(assistant:aborted)",
      "turn_end()",
      "agent_end",
    ]);
    expect(model.requests).toHaveLength(0);
    expect(messages).toHaveLength(2);
    expectSynthesizedAbort(messages[1]);
  });
});
