import { describe, expect, it } from "vitest";
import { Agent } from "../../src/agent/index.js";
import { ScriptedModel, type ScriptedResponse, TEST_MODEL } from "../fakes/scripted-model.js";
import {
  createTool,
  echoTool,
  oneCallThenText,
  promptEvents,
  recordAgent,
  resultText,
  runScript,
  textReply,
  textResult,
  toolCallReply,
  toolEnd,
  transcript,
  user,
} from "./helpers.js";

const LENGTH_TEXT =
  'Tool call "echo" was not executed: the response hit the output token limit, so its arguments may be truncated. Re-issue the tool call with complete arguments.';

describe('stopReason "length"', () => {
  it("refuses the truncated tool calls without hooks or execution and lets the model retry", async () => {
    const echo = echoTool();
    const hookCalls: string[] = [];
    const run = await runScript(
      [echo],
      [
        { toolCalls: [{ id: "L1", name: "echo", arguments: { text: "trunc" } }], stopReason: "length" },
        { text: "retry" },
      ],
      {
        beforeToolCall: () => {
          hookCalls.push("before");
          return undefined;
        },
        afterToolCall: () => {
          hookCalls.push("after");
          return undefined;
        },
      },
    );
    expect(run.shorts).toEqual(oneCallThenText("L1", true, "length"));
    expect(echo.calls).toEqual([]);
    expect(hookCalls).toEqual([]);
    expect(resultText(toolEnd(run.events, "L1").result)).toBe(LENGTH_TEXT);
    expect(transcript(run.model.requests[1]?.messages ?? [])).toEqual([
      "user:go",
      "assistant:[L1]",
      `toolResult:L1:error:${LENGTH_TEXT}`,
    ]);
  });

  it("refuses every call in order, sequentially, even when the tools are parallel", async () => {
    const run = await runScript(
      [echoTool()],
      [
        {
          toolCalls: [
            { id: "L1", name: "echo", arguments: { text: "a" } },
            { id: "L2", name: "echo", arguments: { text: "b" } },
          ],
          stopReason: "length",
        },
        { text: "retry" },
      ],
    );
    expect(run.shorts).toEqual([
      "agent_start",
      "turn_start",
      ...promptEvents("go"),
      ...toolCallReply(2, "length"),
      "tool_execution_start(L1)",
      "tool_execution_end(L1:error)",
      "message_start(toolResult:L1:error)",
      "message_end(toolResult:L1:error)",
      "tool_execution_start(L2)",
      "tool_execution_end(L2:error)",
      "message_start(toolResult:L2:error)",
      "message_end(toolResult:L2:error)",
      "turn_end(L1,L2)",
      "turn_start",
      ...textReply(),
      "turn_end()",
      "agent_end",
    ]);
  });

  it("a length reply without tool calls ends like a normal reply", async () => {
    const run = await runScript([], [{ text: "cut off", stopReason: "length" }, { text: "unexpected" }]);
    expect(run.shorts).toEqual([
      "agent_start",
      "turn_start",
      ...promptEvents("go"),
      ...textReply(1, "length"),
      "turn_end()",
      "agent_end",
    ]);
    expect(run.model.requests).toHaveLength(1);
  });
});

describe("terminate", () => {
  const stopper = () => createTool("stop", async () => textResult("stopped", { terminate: true }));
  const twoCalls = (second: string): ScriptedResponse => ({
    toolCalls: [
      { id: "t1", name: "stop", arguments: {} },
      { id: "t2", name: second, arguments: {} },
    ],
  });
  const batchOfTwo = [
    "tool_execution_start(t1)",
    "tool_execution_start(t2)",
    "tool_execution_end(t1)",
    "tool_execution_end(t2)",
    "message_start(toolResult:t1)",
    "message_end(toolResult:t1)",
    "message_start(toolResult:t2)",
    "message_end(toolResult:t2)",
    "turn_end(t1,t2)",
  ];

  it("ends the run after the batch when every result terminates (one model call)", async () => {
    const run = await runScript([stopper()], [twoCalls("stop"), { text: "unexpected" }]);
    expect(run.shorts).toEqual([
      "agent_start",
      "turn_start",
      ...promptEvents("go"),
      ...toolCallReply(2),
      ...batchOfTwo,
      "agent_end",
    ]);
    expect(run.model.requests).toHaveLength(1);
    expect(toolEnd(run.events, "t1").result.terminate).toBe(true);
    // The flag is runtime-only: it is not stored on the tool-result message.
    expect(run.agent.state.messages[2]).not.toHaveProperty("terminate");
  });

  it("continues with the next turn when only some results terminate", async () => {
    const run = await runScript([stopper(), createTool("go")], [twoCalls("go"), { text: "answer" }]);
    expect(run.shorts).toEqual([
      "agent_start",
      "turn_start",
      ...promptEvents("go"),
      ...toolCallReply(2),
      ...batchOfTwo,
      "turn_start",
      ...textReply(),
      "turn_end()",
      "agent_end",
    ]);
    expect(run.model.requests).toHaveLength(2);
  });

  it("a blocked call with terminate: true terminates with the default blocked text", async () => {
    const tool = createTool("guarded");
    const run = await runScript([tool], [{ toolCalls: [{ id: "t1", name: "guarded", arguments: {} }] }], {
      beforeToolCall: () => ({ block: true, terminate: true }),
    });
    expect(run.shorts).toEqual([
      "agent_start",
      "turn_start",
      ...promptEvents("go"),
      ...toolCallReply(1),
      "tool_execution_start(t1)",
      "tool_execution_end(t1:error)",
      "message_start(toolResult:t1:error)",
      "message_end(toolResult:t1:error)",
      "turn_end(t1)",
      "agent_end",
    ]);
    expect(tool.calls).toEqual([]);
    expect(toolEnd(run.events, "t1").result).toEqual({
      content: [{ type: "text", text: "Tool execution was blocked" }],
      details: {},
      terminate: true,
    });
    expect(run.model.requests).toHaveLength(1);
  });

  it("a queued follow-up still runs after a terminating batch", async () => {
    const model = new ScriptedModel([twoCalls("stop"), { text: "follow-up answer" }]);
    const agent = new Agent({
      initialState: { model: TEST_MODEL, tools: [stopper()] },
      streamFn: model.streamFn,
    });
    const { shorts } = recordAgent(agent);
    agent.followUp(user("F1"));
    await agent.prompt("go");
    expect(shorts).toEqual([
      "agent_start",
      "turn_start",
      ...promptEvents("go"),
      ...toolCallReply(2),
      ...batchOfTwo,
      "turn_start",
      ...promptEvents("F1"),
      ...textReply(),
      "turn_end()",
      "agent_end",
    ]);
  });
});
