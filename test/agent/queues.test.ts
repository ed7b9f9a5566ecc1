import { describe, expect, it } from "vitest";
import { Agent, type QueueMode } from "../../src/agent/index.js";
import { ScriptedModel, TEST_MODEL } from "../fakes/scripted-model.js";
import { deferred } from "../support/async.js";
import {
  createTool,
  injectedTurn,
  promptEvents,
  recordAgent,
  textReply,
  textResult,
  toolCallReply,
  transcript,
  user,
  whenAborted,
} from "./helpers.js";

/** A tool that signals when it runs and finishes only when the test releases it. */
function gatedTool() {
  const running = deferred();
  const release = deferred();
  const tool = createTool("slow", async () => {
    running.resolve();
    await release.promise;
    return textResult("slow done");
  });
  return { tool, running, release };
}

const TOOL_TURN = [
  "agent_start",
  "turn_start",
  ...promptEvents("P"),
  ...toolCallReply(1),
  "tool_execution_start(t1)",
  "tool_execution_end(t1)",
  "message_start(toolResult:t1)",
  "message_end(toolResult:t1)",
  "turn_end(t1)",
];

async function steerAndFollowUpDuringTool(mode: QueueMode) {
  const { tool, running, release } = gatedTool();
  const model = new ScriptedModel([
    { toolCalls: [{ id: "t1", name: "slow", arguments: {} }] },
    { text: "a1" },
    { text: "a2" },
    { text: "a3" },
    { text: "a4" },
    { text: "unexpected" },
  ]);
  const agent = new Agent({
    initialState: { model: TEST_MODEL, tools: [tool] },
    streamFn: model.streamFn,
    steeringMode: mode,
    followUpMode: mode,
  });
  const { shorts } = recordAgent(agent);
  const run = agent.prompt("P");
  await running.promise;
  agent.steer(user("S1"));
  agent.steer(user("S2"));
  agent.followUp(user("F1"));
  agent.followUp(user("F2"));
  release.resolve();
  await run;
  return { agent, model, shorts };
}

describe("steering and follow-up during a tool", () => {
  it("one-at-a-time: each queued message gets its own turn, steering first (5 model calls)", async () => {
    const { agent, model, shorts } = await steerAndFollowUpDuringTool("one-at-a-time");
    expect(shorts).toEqual([
      ...TOOL_TURN,
      ...injectedTurn("S1"),
      ...injectedTurn("S2"),
      ...injectedTurn("F1"),
      ...injectedTurn("F2"),
      "agent_end",
    ]);
    expect(model.requests).toHaveLength(5);
    expect(model.requests.map((request) => transcript(request.messages).at(-1))).toEqual([
      "user:P",
      "user:S1",
      "user:S2",
      "user:F1",
      "user:F2",
    ]);
    expect(transcript(agent.state.messages)).toEqual([
      "user:P",
      "assistant:[t1]",
      "toolResult:t1:slow done",
      "user:S1",
      "assistant:a1",
      "user:S2",
      "assistant:a2",
      "user:F1",
      "assistant:a3",
      "user:F2",
      "assistant:a4",
    ]);
    expect(agent.hasQueuedMessages()).toBe(false);
  });

  it("all: steering messages share a turn, follow-ups share the next (3 model calls)", async () => {
    const { agent, model, shorts } = await steerAndFollowUpDuringTool("all");
    expect(shorts).toEqual([
      ...TOOL_TURN,
      ...injectedTurn("S1", "S2"),
      ...injectedTurn("F1", "F2"),
      "agent_end",
    ]);
    expect(model.requests).toHaveLength(3);
    expect(transcript(model.requests[1]?.messages ?? []).slice(-3)).toEqual([
      "toolResult:t1:slow done",
      "user:S1",
      "user:S2",
    ]);
    expect(transcript(agent.state.messages)).toEqual([
      "user:P",
      "assistant:[t1]",
      "toolResult:t1:slow done",
      "user:S1",
      "user:S2",
      "assistant:a1",
      "user:F1",
      "user:F2",
      "assistant:a2",
    ]);
    expect(agent.hasQueuedMessages()).toBe(false);
  });
});

describe("steer() while idle", () => {
  it("is injected right after the next prompt, in the same turn, with one model call", async () => {
    const model = new ScriptedModel([{ text: "answer" }, { text: "unexpected" }]);
    const agent = new Agent({ initialState: { model: TEST_MODEL }, streamFn: model.streamFn });
    const { shorts } = recordAgent(agent);
    agent.steer(user("queued-before"));
    expect(agent.hasQueuedMessages()).toBe(true);
    await agent.prompt("P");
    expect(shorts).toEqual([
      "agent_start",
      "turn_start",
      ...promptEvents("P"),
      ...promptEvents("queued-before"),
      ...textReply(),
      "turn_end()",
      "agent_end",
    ]);
    expect(model.requests).toHaveLength(1);
    expect(transcript(model.requests[0]?.messages ?? [])).toEqual(["user:P", "user:queued-before"]);
    expect(agent.hasQueuedMessages()).toBe(false);
  });
});

describe("a drained message survives the run ending before its injection (deviation 3)", () => {
  it("abort: a steer drained after the tool batch goes back to the front and the next run injects it in order", async () => {
    const { tool, running, release } = gatedTool();
    const preparing = deferred();
    const model = new ScriptedModel([
      { toolCalls: [{ id: "t1", name: "slow", arguments: {} }] },
      { text: "b1" },
      { text: "b2" },
      { text: "b3" },
    ]);
    const agent = new Agent({
      initialState: { model: TEST_MODEL, tools: [tool] },
      streamFn: model.streamFn,
      // Drained S1 is pending while this hook waits; it fails once the run is aborted.
      prepareNextTurn: async (_ctx, signal) => {
        preparing.resolve();
        await whenAborted(signal);
        throw new Error("preparation aborted");
      },
    });
    const { shorts } = recordAgent(agent);
    const run = agent.prompt("P");
    await running.promise;
    agent.steer(user("S1"));
    agent.steer(user("S2"));
    release.resolve();
    await preparing.promise;
    agent.abort();
    await run;

    expect(shorts).toEqual([
      ...TOOL_TURN,
      "turn_start",
      "message_start(assistant)",
      "message_end(assistant:aborted)",
      "turn_end()",
      "agent_end",
    ]);
    expect(agent.state.errorMessage).toBe("preparation aborted");
    expect(model.requests).toHaveLength(1);
    expect(agent.peekQueuedMessages().map((message) => transcript([message])[0])).toEqual(["user:S1"]);

    agent.steer(user("S3"));
    agent.prepareNextTurn = undefined;
    shorts.length = 0;
    await agent.prompt("P2");

    expect(shorts).toEqual([
      "agent_start",
      "turn_start",
      ...promptEvents("P2"),
      ...promptEvents("S1"),
      ...textReply(),
      "turn_end()",
      ...injectedTurn("S2"),
      ...injectedTurn("S3"),
      "agent_end",
    ]);
    expect(agent.hasQueuedMessages()).toBe(false);
  });

  it("error: steers drained in all mode go back ahead of a message queued later, in their order", async () => {
    const { tool, running, release } = gatedTool();
    const model = new ScriptedModel([
      { toolCalls: [{ id: "t1", name: "slow", arguments: {} }] },
      { text: "b1" },
    ]);
    const agent = new Agent({
      initialState: { model: TEST_MODEL, tools: [tool] },
      streamFn: model.streamFn,
      steeringMode: "all",
    });
    const { shorts } = recordAgent(agent);
    let turnStarts = 0;
    agent.subscribe((event) => {
      // The second turn_start comes after S1 and S2 were drained and before they are injected.
      if (event.type === "turn_start" && ++turnStarts === 2) throw new Error("listener failed");
    });
    const run = agent.prompt("P");
    await running.promise;
    agent.steer(user("S1"));
    agent.steer(user("S2"));
    release.resolve();
    await run;

    expect(shorts).toEqual([
      ...TOOL_TURN,
      "turn_start",
      "message_start(assistant)",
      "message_end(assistant:error)",
      "turn_end()",
      "agent_end",
    ]);
    expect(agent.state.errorMessage).toBe("listener failed");
    expect(agent.peekQueuedMessages().map((message) => transcript([message])[0])).toEqual([
      "user:S1",
      "user:S2",
    ]);

    agent.steer(user("S3"));
    shorts.length = 0;
    await agent.prompt("P2");
    expect(shorts).toEqual([
      "agent_start",
      "turn_start",
      ...promptEvents("P2"),
      ...promptEvents("S1"),
      ...promptEvents("S2"),
      ...promptEvents("S3"),
      ...textReply(),
      "turn_end()",
      "agent_end",
    ]);
    expect(agent.hasQueuedMessages()).toBe(false);
  });

  it("error: a drained follow-up goes back to the front of the follow-up queue", async () => {
    const model = new ScriptedModel([{ text: "a1" }, { text: "b1" }, { text: "b2" }, { text: "b3" }]);
    const agent = new Agent({
      initialState: { model: TEST_MODEL },
      streamFn: model.streamFn,
      prepareNextTurn: () => {
        throw new Error("prepare failed");
      },
    });
    const { shorts } = recordAgent(agent);
    const stopQueueing = agent.subscribe((event) => {
      if (event.type === "message_end" && (event.message as { role: string }).role === "assistant") {
        if (!agent.hasQueuedMessages()) agent.followUp(user("F1"));
      }
    });
    await agent.prompt("P");

    expect(shorts).toEqual([
      "agent_start",
      "turn_start",
      ...promptEvents("P"),
      ...textReply(),
      "turn_end()",
      "turn_start",
      "message_start(assistant)",
      "message_end(assistant:error)",
      "turn_end()",
      "agent_end",
    ]);
    expect(agent.state.errorMessage).toBe("prepare failed");
    expect(agent.peekQueuedMessages().map((message) => transcript([message])[0])).toEqual(["user:F1"]);

    stopQueueing();
    agent.prepareNextTurn = undefined;
    agent.followUp(user("F2"));
    shorts.length = 0;
    await agent.prompt("P2");
    expect(shorts).toEqual([
      "agent_start",
      "turn_start",
      ...promptEvents("P2"),
      ...textReply(),
      "turn_end()",
      ...injectedTurn("F1"),
      ...injectedTurn("F2"),
      "agent_end",
    ]);
    expect(agent.hasQueuedMessages()).toBe(false);
  });
});
