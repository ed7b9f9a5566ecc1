import { describe, expect, it } from "vitest";
import { Agent } from "../../src/agent/index.js";
import { ScriptedModel, TEST_MODEL } from "../fakes/scripted-model.js";
import { injectedTurn, recordAgent, textReply, transcript, user } from "./helpers.js";

describe("continue() and deviation 3", () => {
  it("a steer drained by continue() stays queued when the run fails before injecting it", async () => {
    const model = new ScriptedModel([{ text: "first" }, { text: "r1" }]);
    const agent = new Agent({ initialState: { model: TEST_MODEL }, streamFn: model.streamFn });
    await agent.prompt("P");
    const { shorts } = recordAgent(agent);
    const stopThrowing = agent.subscribe((event) => {
      if (event.type === "agent_start") throw new Error("listener failed");
    });
    agent.steer(user("S1"));

    await agent.continue();

    expect(shorts).toEqual([
      "agent_start",
      "message_start(assistant)",
      "message_end(assistant:error)",
      "turn_end()",
      "agent_end",
    ]);
    expect(agent.peekQueuedMessages().map((message) => transcript([message])[0])).toEqual(["user:S1"]);

    stopThrowing();
    shorts.length = 0;
    await agent.continue();
    expect(shorts).toEqual(["agent_start", ...injectedTurn("S1"), "agent_end"]);
    expect(transcript(agent.state.messages)).toEqual([
      "user:P",
      "assistant:first",
      "assistant:",
      "user:S1",
      "assistant:r1",
    ]);
  });
});

describe("continue()", () => {
  async function agentWithAssistantTail(script: { text: string }[]) {
    const model = new ScriptedModel([{ text: "first" }, ...script]);
    const agent = new Agent({ initialState: { model: TEST_MODEL }, streamFn: model.streamFn });
    await agent.prompt("P");
    const recorded = recordAgent(agent);
    return { agent, model, ...recorded };
  }

  it("from an assistant tail turns queued steers into turns: u S1, a, u S2, a", async () => {
    const { agent, model, shorts } = await agentWithAssistantTail([{ text: "r1" }, { text: "r2" }]);
    agent.steer(user("S1"));
    agent.steer(user("S2"));

    await agent.continue();

    expect(shorts).toEqual(["agent_start", ...injectedTurn("S1"), ...injectedTurn("S2"), "agent_end"]);
    expect(transcript(agent.state.messages)).toEqual([
      "user:P",
      "assistant:first",
      "user:S1",
      "assistant:r1",
      "user:S2",
      "assistant:r2",
    ]);
    expect(model.requests).toHaveLength(3);
    expect(transcript(model.requests[1]?.messages ?? [])).toEqual(["user:P", "assistant:first", "user:S1"]);
    // Nothing is left to continue with.
    await expect(agent.continue()).rejects.toThrow("Cannot continue from message role: assistant");
  });

  it("from an assistant tail without steering uses the follow-up queue", async () => {
    const { agent, shorts } = await agentWithAssistantTail([{ text: "r1" }]);
    agent.followUp(user("F1"));
    await agent.continue();
    expect(shorts).toEqual(["agent_start", ...injectedTurn("F1"), "agent_end"]);
    expect(agent.hasQueuedMessages()).toBe(false);
  });

  it("from a tool-result tail calls the model with the transcript and reports only new messages", async () => {
    const model = new ScriptedModel([{ text: "resumed" }]);
    const agent = new Agent({
      initialState: {
        model: TEST_MODEL,
        messages: [
          user("P"),
          {
            role: "assistant",
            content: [{ type: "toolCall", id: "t1", name: "echo", arguments: {} }],
            api: "scripted",
            provider: "scripted",
            model: "scripted",
            usage: {
              input: 0,
              output: 0,
              cacheRead: 0,
              cacheWrite: 0,
              totalTokens: 0,
              cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
            },
            stopReason: "toolUse",
            timestamp: 0,
          },
          {
            role: "toolResult",
            toolCallId: "t1",
            toolName: "echo",
            content: [{ type: "text", text: "tool output" }],
            isError: false,
            timestamp: 0,
          },
        ],
      },
      streamFn: model.streamFn,
    });
    const { events, shorts } = recordAgent(agent);

    await agent.continue();

    expect(shorts).toEqual(["agent_start", "turn_start", ...textReply(), "turn_end()", "agent_end"]);
    expect(transcript(model.requests[0]?.messages ?? [])).toEqual([
      "user:P",
      "assistant:[t1]",
      "toolResult:t1:tool output",
    ]);
    const end = events.at(-1);
    expect(end?.type === "agent_end" ? transcript(end.messages) : []).toEqual(["assistant:resumed"]);
    expect(agent.state.messages).toHaveLength(4);
  });

  it("rejects on an empty transcript and on an assistant tail with empty queues", async () => {
    const model = new ScriptedModel([{ text: "first" }]);
    const agent = new Agent({ initialState: { model: TEST_MODEL }, streamFn: model.streamFn });
    await expect(agent.continue()).rejects.toThrow("No messages to continue from");
    await agent.prompt("P");
    await expect(agent.continue()).rejects.toThrow("Cannot continue from message role: assistant");
    expect(model.requests).toHaveLength(1);
    expect(agent.state.isStreaming).toBe(false);
  });
});
