import { describe, expect, it } from "vitest";
import {
  Agent,
  type AgentContext,
  type AgentLoopConfig,
  type AgentMessage,
  type AssistantMessage,
  agentLoop,
  agentLoopContinue,
  runAgentLoop,
  runAgentLoopContinue,
  type TurnContext,
} from "../../src/agent/index.js";
import { ScriptedModel, TEST_MODEL, zeroUsage } from "../fakes/scripted-model.js";
import {
  collect,
  ECHO_TURN_EVENTS,
  ECHO_TURN_SCRIPT,
  echoTool,
  loopConfig,
  promptEvents,
  recordAgent,
  short,
  textReply,
  transcript,
  user,
} from "./helpers.js";

/** Runs the low-level loop with an awaited sink and returns shortened events, new messages and the model. */
async function runLoop(overrides: Partial<AgentLoopConfig>, script = ECHO_TURN_SCRIPT, signal?: AbortSignal) {
  const model = new ScriptedModel(script);
  const events: string[] = [];
  const messages = await runAgentLoop(
    [user("go")],
    { systemPrompt: "sys", messages: [], tools: [echoTool()] },
    loopConfig(overrides),
    (event) => {
      events.push(short(event));
    },
    signal,
    model.streamFn,
  );
  return { events, messages, model };
}

describe("shouldStopAfterTurn", () => {
  it("stops after the turn; steering was polled once (at start) and follow-ups never", async () => {
    let steeringPolls = 0;
    let followUpPolls = 0;
    const contexts: TurnContext[] = [];
    const { events, messages, model } = await runLoop({
      getSteeringMessages: async () => {
        steeringPolls++;
        return [];
      },
      getFollowUpMessages: async () => {
        followUpPolls++;
        // Non-empty only once, so a wrong extra poll fails the test instead of looping forever.
        return followUpPolls === 1 ? [user("never")] : [];
      },
      shouldStopAfterTurn: (ctx) => {
        contexts.push(ctx);
        return true;
      },
    });
    expect(events).toEqual([...ECHO_TURN_EVENTS, "agent_end"]);
    expect(steeringPolls).toBe(1);
    expect(followUpPolls).toBe(0);
    expect(model.requests).toHaveLength(1);
    expect(contexts).toHaveLength(1);
    expect(contexts[0]?.message.stopReason).toBe("toolUse");
    expect(contexts[0]?.toolResults.map((result) => result.toolCallId)).toEqual(["t1"]);
    expect(transcript(contexts[0]?.newMessages ?? [])).toEqual([
      "user:go",
      "assistant:[t1]",
      "toolResult:t1:echo:a",
    ]);
    expect(transcript(contexts[0]?.context.messages ?? [])).toEqual([
      "user:go",
      "assistant:[t1]",
      "toolResult:t1:echo:a",
    ]);
    expect(transcript(messages)).toEqual(["user:go", "assistant:[t1]", "toolResult:t1:echo:a"]);
  });

  it("returning false keeps going; the Agent passes its signal as the second argument", async () => {
    const model = new ScriptedModel(ECHO_TURN_SCRIPT);
    const signals: (AbortSignal | undefined)[] = [];
    const agent = new Agent({
      initialState: { model: TEST_MODEL, tools: [echoTool()] },
      streamFn: model.streamFn,
      shouldStopAfterTurn: (_ctx, signal) => {
        signals.push(signal);
        return false;
      },
    });
    const { shorts } = recordAgent(agent);
    await agent.prompt("go");
    expect(shorts).toEqual([...ECHO_TURN_EVENTS, "turn_start", ...textReply(), "turn_end()", "agent_end"]);
    expect(signals).toHaveLength(2);
    expect(signals[0]).toBeInstanceOf(AbortSignal);
  });
});

describe("queue drain points (§4)", () => {
  it("polls steering at start, after each turn and before a turn when the last poll was empty; follow-ups once", async () => {
    const log: string[] = [];
    const { events } = await runLoop({
      getSteeringMessages: async () => {
        log.push("steering");
        return [];
      },
      getFollowUpMessages: async () => {
        log.push("follow-up");
        return [];
      },
      prepareNextTurn: () => {
        log.push("prepareNextTurn");
        return undefined;
      },
    });
    expect(events).toEqual([...ECHO_TURN_EVENTS, "turn_start", ...textReply(), "turn_end()", "agent_end"]);
    expect(log).toEqual(["steering", "steering", "prepareNextTurn", "steering", "steering", "follow-up"]);
  });

  it("steering queued during a slow prepareNextTurn is injected in that turn", async () => {
    const queue: AgentMessage[] = [];
    let prepared = 0;
    const { events, model } = await runLoop({
      getSteeringMessages: async () => queue.splice(0),
      prepareNextTurn: () => {
        if (++prepared === 1) queue.push(user("late steer"));
        return undefined;
      },
    });
    expect(events).toEqual([
      ...ECHO_TURN_EVENTS,
      "turn_start",
      ...promptEvents("late steer"),
      ...textReply(),
      "turn_end()",
      "agent_end",
    ]);
    expect(transcript(model.requests[1]?.messages ?? []).at(-1)).toBe("user:late steer");
  });
});

describe("prepareNextTurn", () => {
  it("is not called before the first turn; its model and thinking level apply to the next request", async () => {
    const calls: TurnContext[] = [];
    const { events, model } = await runLoop({
      reasoning: "high",
      prepareNextTurn: (ctx) => {
        calls.push(ctx);
        return { model: { ...TEST_MODEL, id: "swapped" }, thinkingLevel: "off" };
      },
    });
    expect(events).toEqual([...ECHO_TURN_EVENTS, "turn_start", ...textReply(), "turn_end()", "agent_end"]);
    expect(calls).toHaveLength(1);
    expect(calls[0]?.toolResults.map((result) => result.toolCallId)).toEqual(["t1"]);
    expect(model.requests.map((request) => request.model.id)).toEqual(["scripted", "swapped"]);
    expect(model.requests[0]?.options.reasoning).toBe("high");
    expect(model.requests[1]?.options).not.toHaveProperty("reasoning");
  });

  it("a returned context replaces the working context for the next request", async () => {
    const replacement: AgentContext = { systemPrompt: "new prompt", messages: [user("replaced")], tools: [] };
    const { model, messages } = await runLoop({
      prepareNextTurn: () => ({ context: replacement, thinkingLevel: "low" }),
    });
    expect(model.requests[1]?.systemPrompt).toBe("new prompt");
    expect(transcript(model.requests[1]?.messages ?? [])).toEqual(["user:replaced"]);
    expect(model.requests[1]?.toolNames).toEqual([]);
    expect(model.requests[1]?.options.reasoning).toBe("low");
    expect(transcript(replacement.messages)).toEqual(["user:replaced", "assistant:done"]);
    expect(transcript(messages)).toEqual([
      "user:go",
      "assistant:[t1]",
      "toolResult:t1:echo:a",
      "assistant:done",
    ]);
  });

  it("the Agent's thinking level becomes the reasoning option; off sends none", async () => {
    const model = new ScriptedModel([{ text: "a" }, { text: "b" }]);
    const agent = new Agent({
      initialState: { model: TEST_MODEL, thinkingLevel: "medium" },
      streamFn: model.streamFn,
    });
    await agent.prompt("one");
    agent.state.thinkingLevel = "off";
    await agent.prompt("two");
    expect(model.requests[0]?.options.reasoning).toBe("medium");
    expect(model.requests[1]?.options).not.toHaveProperty("reasoning");
  });
});

describe("agentLoop and agentLoopContinue", () => {
  it("agentLoop starts right away, does not mutate the caller's messages and resolves result() with new messages", async () => {
    const model = new ScriptedModel([{ text: "hello" }]);
    const history = [user("earlier")];
    const stream = agentLoop(
      [user("go")],
      { systemPrompt: "", messages: history },
      loopConfig(),
      undefined,
      model.streamFn,
    );
    const messages = await stream.result();
    expect(model.requests).toHaveLength(1);
    expect(transcript(model.requests[0]?.messages ?? [])).toEqual(["user:earlier", "user:go"]);
    expect(transcript(messages)).toEqual(["user:go", "assistant:hello"]);
    expect(transcript(history)).toEqual(["user:earlier"]);
    expect((await collect(stream)).map(short)).toEqual([
      "agent_start",
      "turn_start",
      ...promptEvents("go"),
      ...textReply(),
      "turn_end()",
      "agent_end",
    ]);
  });

  it("agentLoopContinue throws synchronously on an empty transcript or an assistant tail", () => {
    const model = new ScriptedModel([]);
    expect(() =>
      agentLoopContinue({ systemPrompt: "", messages: [] }, loopConfig(), undefined, model.streamFn),
    ).toThrow("Cannot continue: no messages in context");
    const assistant: AssistantMessage = {
      role: "assistant",
      content: [{ type: "text", text: "hi" }],
      api: "x",
      provider: "x",
      model: "x",
      usage: zeroUsage(),
      stopReason: "stop",
      timestamp: 0,
    };
    expect(() =>
      agentLoopContinue(
        { systemPrompt: "", messages: [user("a"), assistant] },
        loopConfig(),
        undefined,
        model.streamFn,
      ),
    ).toThrow("Cannot continue from message role: assistant");
    expect(model.requests).toHaveLength(0);
  });

  it("runAgentLoopContinue rejects with the same messages", async () => {
    const model = new ScriptedModel([]);
    await expect(
      runAgentLoopContinue(
        { systemPrompt: "", messages: [] },
        loopConfig(),
        () => {},
        undefined,
        model.streamFn,
      ),
    ).rejects.toThrow("Cannot continue: no messages in context");
  });

  it("agentLoopContinue emits no prompt events, reports only new messages and pushes to the caller's array", async () => {
    const model = new ScriptedModel([{ text: "resumed" }]);
    const history = [user("question")];
    const stream = agentLoopContinue(
      { systemPrompt: "", messages: history },
      loopConfig(),
      undefined,
      model.streamFn,
    );
    const events = (await collect(stream)).map(short);
    expect(events).toEqual(["agent_start", "turn_start", ...textReply(), "turn_end()", "agent_end"]);
    expect(transcript(await stream.result())).toEqual(["assistant:resumed"]);
    expect(transcript(history)).toEqual(["user:question", "assistant:resumed"]);
  });
});

describe("transformContext and convertToLlm", () => {
  it("the transformed messages are used for the request only, never stored", async () => {
    const seen: string[][] = [];
    const { model, messages } = await runLoop({
      transformContext: async (input) => {
        seen.push(transcript(input));
        return input.slice(-1);
      },
    });
    expect(seen).toEqual([["user:go"], ["user:go", "assistant:[t1]", "toolResult:t1:echo:a"]]);
    expect(transcript(model.requests[1]?.messages ?? [])).toEqual(["toolResult:t1:echo:a"]);
    expect(transcript(messages)).toEqual([
      "user:go",
      "assistant:[t1]",
      "toolResult:t1:echo:a",
      "assistant:done",
    ]);
  });

  it("custom messages are stored and emitted but the Agent's default convertToLlm hides them from the model", async () => {
    const model = new ScriptedModel([{ text: "ok" }]);
    const agent = new Agent({ initialState: { model: TEST_MODEL }, streamFn: model.streamFn });
    const { shorts } = recordAgent(agent);
    const note = { role: "note", text: "for the UI", timestamp: 0 } as unknown as AgentMessage;
    await agent.prompt([user("go"), note]);
    expect(shorts).toEqual([
      "agent_start",
      "turn_start",
      ...promptEvents("go"),
      "message_start(note)",
      "message_end(note)",
      ...textReply(),
      "turn_end()",
      "agent_end",
    ]);
    expect(transcript(model.requests[0]?.messages ?? [])).toEqual(["user:go"]);
    expect(agent.state.messages[1]).toBe(note);
  });
});
