import { describe, expect, it } from "vitest";
import {
  type AfterToolCallResult,
  Agent,
  type AgentToolUpdateCallback,
  runAgentLoop,
} from "../../src/agent/index.js";
import { ScriptedModel, TEST_MODEL } from "../fakes/scripted-model.js";
import {
  createTool,
  flushMacrotask,
  loopConfig,
  oneCallThenText,
  promptEvents,
  recordAgent,
  resultText,
  runScript,
  short,
  textReply,
  textResult,
  toolCallReply,
  toolEnd,
  transcript,
  user,
} from "./helpers.js";

describe("afterToolCall", () => {
  it("replaces fields one by one: null keeps content, details are replaced, isError flips", async () => {
    const tool = createTool("work", async () => ({
      content: [{ type: "text", text: "orig" }],
      details: { a: 1 },
    }));
    const seen: unknown[] = [];
    const run = await runScript(
      [tool],
      [{ toolCalls: [{ id: "t1", name: "work", arguments: { text: "x" } }] }, { text: "ok" }],
      {
        afterToolCall: (ctx, signal) => {
          seen.push({
            args: ctx.args,
            raw: ctx.toolCall.arguments,
            isError: ctx.isError,
            result: ctx.result,
            signal,
          });
          return { content: null, details: { b: 2 }, isError: true };
        },
      },
    );
    expect(run.shorts).toEqual(oneCallThenText("t1", true));
    expect(seen).toEqual([
      {
        args: { text: "x" },
        raw: { text: "x" },
        isError: false,
        result: { content: [{ type: "text", text: "orig" }], details: { a: 1 } },
        signal: expect.any(AbortSignal),
      },
    ]);
    expect(toolEnd(run.events, "t1")).toMatchObject({
      isError: true,
      result: { content: [{ type: "text", text: "orig" }], details: { b: 2 } },
    });
    expect(run.model.requests[1]?.messages[2]).toMatchObject({
      role: "toolResult",
      isError: true,
      details: { b: 2 },
      content: [{ type: "text", text: "orig" }],
    });
  });

  it("undefined fields and an undefined return keep the original result", async () => {
    const tool = createTool("work", async () => ({
      content: [{ type: "text", text: "orig" }],
      details: { a: 1 },
    }));
    // Explicit undefined fields, as a JavaScript hook may return them.
    const explicitUndefined = {
      content: undefined,
      details: undefined,
      isError: undefined,
      terminate: undefined,
    };
    const patches = [explicitUndefined as unknown as AfterToolCallResult, undefined];
    const run = await runScript(
      [tool],
      [
        {
          toolCalls: [
            { id: "t1", name: "work", arguments: {} },
            { id: "t2", name: "work", arguments: {} },
          ],
        },
        { text: "ok" },
      ],
      { afterToolCall: () => patches.shift() },
    );
    for (const id of ["t1", "t2"]) {
      expect(toolEnd(run.events, id)).toMatchObject({
        isError: false,
        result: { content: [{ type: "text", text: "orig" }], details: { a: 1 } },
      });
    }
    expect(transcript(run.agent.state.messages).slice(2, 4)).toEqual([
      "toolResult:t1:orig",
      "toolResult:t2:orig",
    ]);
  });

  it("can turn a thrown tool error into a success with new content", async () => {
    const tool = createTool("work", async () => {
      throw new Error("boom");
    });
    const seen: { isError: boolean; text: string }[] = [];
    const run = await runScript(
      [tool],
      [{ toolCalls: [{ id: "t1", name: "work", arguments: {} }] }, { text: "ok" }],
      {
        afterToolCall: ({ isError, result }) => {
          seen.push({ isError, text: resultText(result) });
          return { isError: false, content: [{ type: "text", text: "recovered" }] };
        },
      },
    );
    expect(run.shorts).toEqual(oneCallThenText("t1", false));
    expect(seen).toEqual([{ isError: true, text: "boom" }]);
    expect(transcript(run.model.requests[1]?.messages ?? [])[2]).toBe("toolResult:t1:recovered");
  });

  it("a throwing afterToolCall becomes an error result with its message and empty details", async () => {
    const tool = createTool("work", async () => textResult("fine", { details: { a: 1 } }));
    const run = await runScript(
      [tool],
      [{ toolCalls: [{ id: "t1", name: "work", arguments: {} }] }, { text: "ok" }],
      {
        afterToolCall: async () => {
          throw new Error("after failed");
        },
      },
    );
    expect(run.shorts).toEqual(oneCallThenText("t1", true));
    expect(toolEnd(run.events, "t1").result).toEqual({
      content: [{ type: "text", text: "after failed" }],
      details: {},
    });
    expect(transcript(run.model.requests[1]?.messages ?? [])[2]).toBe("toolResult:t1:error:after failed");
  });
});

describe("beforeToolCall", () => {
  it("a throw becomes an error result; the tool and afterToolCall are skipped", async () => {
    const tool = createTool("work");
    const after: string[] = [];
    const run = await runScript(
      [tool],
      [{ toolCalls: [{ id: "t1", name: "work", arguments: {} }] }, { text: "ok" }],
      {
        beforeToolCall: () => {
          throw new Error("before failed");
        },
        afterToolCall: ({ toolCall }) => {
          after.push(toolCall.id);
          return undefined;
        },
      },
    );
    expect(run.shorts).toEqual(oneCallThenText("t1", true));
    expect(tool.calls).toEqual([]);
    expect(after).toEqual([]);
    expect(transcript(run.model.requests[1]?.messages ?? [])[2]).toBe("toolResult:t1:error:before failed");
  });

  it("a block without a reason uses the default text", async () => {
    const tool = createTool("work");
    const run = await runScript(
      [tool],
      [{ toolCalls: [{ id: "t1", name: "work", arguments: {} }] }, { text: "ok" }],
      {
        beforeToolCall: () => ({ block: true }),
      },
    );
    expect(run.shorts).toEqual(oneCallThenText("t1", true));
    expect(transcript(run.model.requests[1]?.messages ?? [])[2]).toBe(
      "toolResult:t1:error:Tool execution was blocked",
    );
  });
});

describe("onUpdate", () => {
  it("update events precede the call's end even when a listener is slow", async () => {
    const tool = createTool("work", async (_id, _params, _signal, onUpdate) => {
      onUpdate?.(textResult("half"));
      return textResult("full");
    });
    const model = new ScriptedModel([
      { toolCalls: [{ id: "t1", name: "work", arguments: {} }] },
      { text: "ok" },
    ]);
    const agent = new Agent({ initialState: { model: TEST_MODEL, tools: [tool] }, streamFn: model.streamFn });
    const log: string[] = [];
    agent.subscribe(async (event) => {
      if (event.type === "tool_execution_update") {
        await flushMacrotask();
        log.push("update handled");
      }
      if (event.type === "tool_execution_end") log.push("end");
    });
    await agent.prompt("go");
    expect(log).toEqual(["update handled", "end"]);
  });

  it("a late onUpdate after execute settled emits nothing and does not reject", async () => {
    let captured: AgentToolUpdateCallback | undefined;
    const tool = createTool("work", async (_id, _params, _signal, onUpdate) => {
      captured = onUpdate;
      onUpdate?.(textResult("during"));
      return textResult("done");
    });
    const model = new ScriptedModel([
      { toolCalls: [{ id: "t1", name: "work", arguments: {} }] },
      { text: "ok" },
    ]);
    const agent = new Agent({
      initialState: { model: TEST_MODEL, tools: [tool] },
      streamFn: model.streamFn,
      // Settled, but the batch is still running.
      afterToolCall: () => {
        captured?.(textResult("late, in afterToolCall"));
        return undefined;
      },
    });
    const { shorts } = recordAgent(agent);
    await agent.prompt("go");
    // After the run.
    expect(() => captured?.(textResult("after the run"))).not.toThrow();
    await flushMacrotask();

    expect(shorts).toEqual([
      "agent_start",
      "turn_start",
      ...promptEvents("go"),
      ...toolCallReply(1),
      "tool_execution_start(t1)",
      "tool_execution_update(t1)",
      "tool_execution_end(t1)",
      "message_start(toolResult:t1)",
      "message_end(toolResult:t1)",
      "turn_end(t1)",
      "turn_start",
      ...textReply(),
      "turn_end()",
      "agent_end",
    ]);
  });

  it("the low-level loop ignores a late onUpdate too", async () => {
    let captured: AgentToolUpdateCallback | undefined;
    const tool = createTool("work", async (_id, _params, _signal, onUpdate) => {
      captured = onUpdate;
      return textResult("done");
    });
    const model = new ScriptedModel([
      { toolCalls: [{ id: "t1", name: "work", arguments: {} }] },
      { text: "ok" },
    ]);
    const events: string[] = [];
    await runAgentLoop(
      [user("go")],
      { systemPrompt: "", messages: [], tools: [tool] },
      loopConfig(),
      (event) => {
        events.push(short(event));
      },
      undefined,
      model.streamFn,
    );
    const count = events.length;
    captured?.(textResult("late"));
    await flushMacrotask();
    expect(events).toHaveLength(count);
    expect(events).not.toContain("tool_execution_update(t1)");
  });
});
