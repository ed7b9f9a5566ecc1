import { describe, expect, it } from "vitest";
import { Agent, type AgentEvent, type AssistantMessage, runAgentLoop } from "../../src/agent/index.js";
import { ScriptedModel, TEST_MODEL } from "../fakes/scripted-model.js";
import { echoTool, loopConfig, recordAgent, short, transcript, user, withoutUpdates } from "./helpers.js";

describe("a text run", () => {
  it("emits the reference order with turn_start before the prompt's message events", async () => {
    const model = new ScriptedModel([{ text: ["Hel", "lo"] }]);
    const agent = new Agent({
      initialState: { model: TEST_MODEL, systemPrompt: "be brief" },
      streamFn: model.streamFn,
    });
    const { events, shorts } = recordAgent(agent);

    await agent.prompt("hi");

    expect(shorts).toEqual([
      "agent_start",
      "turn_start",
      "message_start(user:hi)",
      "message_end(user:hi)",
      "message_start(assistant)",
      "message_update(text_start)",
      "message_update(text_delta)",
      "message_update(text_delta)",
      "message_update(text_end)",
      "message_end(assistant:stop)",
      "turn_end()",
      "agent_end",
    ]);
    const deltas = events.flatMap((event) =>
      event.type === "message_update" && event.assistantMessageEvent.type === "text_delta"
        ? [event.assistantMessageEvent.delta]
        : [],
    );
    expect(deltas).toEqual(["Hel", "lo"]);
    expect(model.requests).toHaveLength(1);
    expect(model.requests[0]?.systemPrompt).toBe("be brief");
    expect(transcript(model.requests[0]?.messages ?? [])).toEqual(["user:hi"]);
    expect(transcript(agent.state.messages)).toEqual(["user:hi", "assistant:Hello"]);
    const end = events.at(-1) as Extract<AgentEvent, { type: "agent_end" }>;
    expect(transcript(end.messages)).toEqual(["user:hi", "assistant:Hello"]);
  });

  it("gives each message_update its own shallow copy and message_end the stored object", async () => {
    const model = new ScriptedModel([{ text: ["a", "b"] }]);
    const agent = new Agent({ initialState: { model: TEST_MODEL }, streamFn: model.streamFn });
    const { events } = recordAgent(agent);
    await agent.prompt("hi");
    const updates = events.filter((event) => event.type === "message_update").map((event) => event.message);
    expect(new Set(updates).size).toBe(updates.length);
    const end = events.filter((event) => event.type === "message_end").at(-1);
    expect(end?.message).toBe(agent.state.messages[1]);
    expect(updates).not.toContain(end?.message);
  });

  it("streams thinking before text, each provider event as one message_update carrying the raw event", async () => {
    const model = new ScriptedModel([{ thinking: "hmm", text: "answer" }]);
    const agent = new Agent({ initialState: { model: TEST_MODEL }, streamFn: model.streamFn });
    const { events, shorts } = recordAgent(agent);
    await agent.prompt("hi");
    expect(shorts).toEqual([
      "agent_start",
      "turn_start",
      "message_start(user:hi)",
      "message_end(user:hi)",
      "message_start(assistant)",
      "message_update(thinking_start)",
      "message_update(thinking_delta)",
      "message_update(thinking_end)",
      "message_update(text_start)",
      "message_update(text_delta)",
      "message_update(text_end)",
      "message_end(assistant:stop)",
      "turn_end()",
      "agent_end",
    ]);
    const thinkingDelta = events.find(
      (event) => event.type === "message_update" && event.assistantMessageEvent.type === "thinking_delta",
    );
    expect(thinkingDelta).toMatchObject({ assistantMessageEvent: { delta: "hmm", contentIndex: 0 } });
    expect(agent.state.messages[1]).toMatchObject({
      content: [
        { type: "thinking", thinking: "hmm" },
        { type: "text", text: "answer" },
      ],
    });
  });

  it("without a start event emits no message_update and message_start right before message_end", async () => {
    const model = new ScriptedModel([{ text: ["x", "y"], noStart: true }]);
    const agent = new Agent({ initialState: { model: TEST_MODEL }, streamFn: model.streamFn });
    const { shorts } = recordAgent(agent);
    await agent.prompt("hi");
    expect(shorts).toEqual([
      "agent_start",
      "turn_start",
      "message_start(user:hi)",
      "message_end(user:hi)",
      "message_start(assistant)",
      "message_end(assistant:stop)",
      "turn_end()",
      "agent_end",
    ]);
    expect(transcript(agent.state.messages)).toEqual(["user:hi", "assistant:xy"]);
  });
});

describe("one tool call", () => {
  it("runs the tool, feeds its result to the next request and ends after the text answer", async () => {
    const echo = echoTool();
    const model = new ScriptedModel([
      { toolCalls: [{ id: "t1", name: "echo", arguments: { text: "hi" } }] },
      { text: "done" },
    ]);
    const agent = new Agent({ initialState: { model: TEST_MODEL, tools: [echo] }, streamFn: model.streamFn });
    const { events, shorts } = recordAgent(agent);

    await agent.prompt("go");

    expect(shorts).toEqual([
      "agent_start",
      "turn_start",
      "message_start(user:go)",
      "message_end(user:go)",
      "message_start(assistant)",
      "message_update(toolcall_start)",
      "message_update(toolcall_delta)",
      "message_update(toolcall_end)",
      "message_end(assistant:toolUse)",
      "tool_execution_start(t1)",
      "tool_execution_end(t1)",
      "message_start(toolResult:t1)",
      "message_end(toolResult:t1)",
      "turn_end(t1)",
      "turn_start",
      "message_start(assistant)",
      "message_update(text_start)",
      "message_update(text_delta)",
      "message_update(text_end)",
      "message_end(assistant:stop)",
      "turn_end()",
      "agent_end",
    ]);
    expect(echo.calls).toEqual([{ id: "t1", params: { text: "hi" } }]);
    expect(model.requests[0]?.toolNames).toEqual(["echo"]);
    expect(transcript(model.requests[1]?.messages ?? [])).toEqual([
      "user:go",
      "assistant:[t1]",
      "toolResult:t1:echo:hi",
    ]);
    expect(transcript(agent.state.messages)).toEqual([
      "user:go",
      "assistant:[t1]",
      "toolResult:t1:echo:hi",
      "assistant:done",
    ]);
    const start = events.find((event) => event.type === "tool_execution_start");
    expect(start).toMatchObject({ toolCallId: "t1", toolName: "echo", args: { text: "hi" } });
    const end = events.find((event) => event.type === "tool_execution_end");
    expect(end).toMatchObject({ toolCallId: "t1", toolName: "echo", isError: false });
  });
});

describe("provider error", () => {
  it("ends the run at the error message: no tools, no queue polling, no further turn", async () => {
    const echo = echoTool();
    const model = new ScriptedModel([
      {
        text: "partial",
        toolCalls: [{ id: "t1", name: "echo", arguments: { text: "x" } }],
        stopReason: "error",
        errorMessage: "HTTP 500",
      },
    ]);
    let steeringPolls = 0;
    let followUpPolls = 0;
    const events: string[] = [];
    const messages = await runAgentLoop(
      [user("go")],
      { systemPrompt: "", messages: [], tools: [echo] },
      loopConfig({
        getSteeringMessages: async () => {
          steeringPolls++;
          return [];
        },
        getFollowUpMessages: async () => {
          followUpPolls++;
          // Non-empty only once, so a wrong extra poll fails the test instead of looping forever.
          return followUpPolls === 1 ? [user("never")] : [];
        },
      }),
      (event) => {
        events.push(short(event));
      },
      undefined,
      model.streamFn,
    );

    expect(withoutUpdates(events)).toEqual([
      "agent_start",
      "turn_start",
      "message_start(user:go)",
      "message_end(user:go)",
      "message_start(assistant)",
      "message_end(assistant:error)",
      "turn_end()",
      "agent_end",
    ]);
    expect(events).toContain("message_update(text_delta)");
    expect(steeringPolls).toBe(1);
    expect(followUpPolls).toBe(0);
    expect(echo.calls).toEqual([]);
    expect(model.requests).toHaveLength(1);
    expect((messages.at(-1) as AssistantMessage).errorMessage).toBe("HTTP 500");
  });

  it("sets the agent's errorMessage from turn_end", async () => {
    const model = new ScriptedModel([{ text: "x", stopReason: "error", errorMessage: "HTTP 500" }]);
    const agent = new Agent({ initialState: { model: TEST_MODEL }, streamFn: model.streamFn });
    const seenAtMessageEnd: (string | undefined)[] = [];
    const seenAtTurnEnd: (string | undefined)[] = [];
    agent.subscribe((event) => {
      if (event.type === "message_end") seenAtMessageEnd.push(agent.state.errorMessage);
      if (event.type === "turn_end") seenAtTurnEnd.push(agent.state.errorMessage);
    });
    await agent.prompt("go");
    expect(seenAtMessageEnd).toEqual([undefined, undefined]);
    expect(seenAtTurnEnd).toEqual(["HTTP 500"]);
    expect(agent.state.errorMessage).toBe("HTTP 500");
    expect(agent.state.isStreaming).toBe(false);
  });
});

describe("a throwing stream function", () => {
  it("ends the Agent run with a failure message; prompt() resolves", async () => {
    const agent = new Agent({
      initialState: { model: TEST_MODEL },
      streamFn: () => {
        throw new Error("contract violated");
      },
    });
    const { events, shorts } = recordAgent(agent);
    await expect(agent.prompt("go")).resolves.toBeUndefined();
    expect(shorts).toEqual([
      "agent_start",
      "turn_start",
      "message_start(user:go)",
      "message_end(user:go)",
      "message_start(assistant)",
      "message_end(assistant:error)",
      "turn_end()",
      "agent_end",
    ]);
    expect(agent.state.errorMessage).toBe("contract violated");
    const end = events.at(-1) as Extract<AgentEvent, { type: "agent_end" }>;
    expect(transcript(end.messages)).toEqual(["user:go", "assistant:"]);
    expect(agent.state.messages.at(-1)).toMatchObject({
      stopReason: "error",
      errorMessage: "contract violated",
    });
  });
});

describe("abort while streaming", () => {
  it("ends with the aborted message from the stream and records the error", async () => {
    const model = new ScriptedModel([{ text: "thinking about it", hang: true }, { text: "again" }]);
    const agent = new Agent({ initialState: { model: TEST_MODEL }, streamFn: model.streamFn });
    const { shorts } = recordAgent(agent);
    const stopAborting = agent.subscribe((event) => {
      if (event.type === "message_update" && event.assistantMessageEvent.type === "text_end") agent.abort();
    });

    await agent.prompt("go");

    expect(shorts).toEqual([
      "agent_start",
      "turn_start",
      "message_start(user:go)",
      "message_end(user:go)",
      "message_start(assistant)",
      "message_update(text_start)",
      "message_update(text_delta)",
      "message_update(text_end)",
      "message_end(assistant:aborted)",
      "turn_end()",
      "agent_end",
    ]);
    expect(agent.state.errorMessage).toBe("Request was aborted");
    expect(model.requests).toHaveLength(1);
    expect(transcript(agent.state.messages)).toEqual(["user:go", "assistant:thinking about it"]);

    // The next run gets a fresh signal and clears the error.
    stopAborting();
    await agent.prompt("next");
    expect(model.requests).toHaveLength(2);
    expect(model.requests[1]?.options.signal?.aborted).toBe(false);
    expect(agent.state.errorMessage).toBeUndefined();
  });
});

describe("getApiKey", () => {
  it("is called once per request with the provider; a falsy key falls back to config.apiKey", async () => {
    const keys = ["key-1", ""];
    const calls: string[] = [];
    const model = new ScriptedModel([
      { toolCalls: [{ id: "t1", name: "echo", arguments: { text: "a" } }] },
      { text: "done" },
    ]);
    await runAgentLoop(
      [user("go")],
      { systemPrompt: "", messages: [], tools: [echoTool()] },
      loopConfig({
        apiKey: "fallback",
        getApiKey: (provider) => {
          calls.push(provider);
          return keys.shift();
        },
      }),
      () => {},
      undefined,
      model.streamFn,
    );
    expect(calls).toEqual(["scripted", "scripted"]);
    expect(model.requests.map((request) => request.options.apiKey)).toEqual(["key-1", "fallback"]);
  });

  it("the Agent passes its getApiKey and falls back to streamOptions.apiKey", async () => {
    const model = new ScriptedModel([{ text: "a" }, { text: "b" }]);
    const calls: string[] = [];
    const agent = new Agent({
      initialState: { model: { ...TEST_MODEL, provider: "acme" } },
      streamFn: model.streamFn,
      streamOptions: { apiKey: "static" },
      getApiKey: async (provider) => {
        calls.push(provider);
        return calls.length === 1 ? "dynamic" : undefined;
      },
    });
    await agent.prompt("one");
    await agent.prompt("two");
    expect(calls).toEqual(["acme", "acme"]);
    expect(model.requests.map((request) => request.options.apiKey)).toEqual(["dynamic", "static"]);
  });
});
