import { describe, expect, it } from "vitest";
import { Agent, type AgentEvent, type AgentMessage } from "../../src/agent/index.js";
import { ScriptedModel, TEST_MODEL } from "../fakes/scripted-model.js";
import { deferred } from "../support/async.js";
import {
  createTool,
  echoTool,
  flushMacrotask,
  promptEvents,
  recordAgent,
  textReply,
  textResult,
  toolCallReply,
  transcript,
  user,
} from "./helpers.js";

const PROMPT_BUSY =
  "Agent is already processing a prompt. Use steer() or followUp() to queue messages, or wait for completion.";
const CONTINUE_BUSY = "Agent is already processing. Wait for completion before continuing.";
const RESET_BUSY = "Agent is already processing. Wait for completion before resetting.";

/** An agent whose first turn calls a tool that runs until the test resolves `release`. */
function busyAgent() {
  const running = deferred();
  const release = deferred();
  const tool = createTool("wait", async () => {
    running.resolve();
    await release.promise;
    return textResult("waited");
  });
  const model = new ScriptedModel([
    { toolCalls: [{ id: "t1", name: "wait", arguments: {} }] },
    { text: "done" },
  ]);
  const agent = new Agent({
    initialState: { model: TEST_MODEL, tools: [tool], systemPrompt: "sys" },
    streamFn: model.streamFn,
  });
  return { agent, model, running, release };
}

describe("Agent state while streaming", () => {
  it("streamingMessage follows message_start/update and clears at message_end; the partial is never in messages", async () => {
    const model = new ScriptedModel([{ text: ["a", "b"] }]);
    const agent = new Agent({ initialState: { model: TEST_MODEL }, streamFn: model.streamFn });
    const observations: string[] = [];
    agent.subscribe((event) => {
      const streaming = agent.state.streamingMessage;
      if (event.type === "message_start" || event.type === "message_update") {
        const same = streaming === event.message;
        const stored = agent.state.messages.includes(streaming as AgentMessage);
        observations.push(`${event.type}:${same ? "current" : "other"}:${stored ? "stored" : "not stored"}`);
      }
      if (event.type === "message_end") {
        const cleared = streaming === undefined ? "cleared" : "set";
        const stored = agent.state.messages.at(-1) === event.message ? "stored" : "missing";
        observations.push(`message_end:${cleared}:${stored}`);
      }
    });
    await agent.prompt("hi");
    expect(observations).toEqual([
      "message_start:current:not stored",
      "message_end:cleared:stored",
      "message_start:current:not stored",
      "message_update:current:not stored",
      "message_update:current:not stored",
      "message_update:current:not stored",
      "message_update:current:not stored",
      "message_end:cleared:stored",
    ]);
    expect(agent.state.streamingMessage).toBeUndefined();
  });

  it("pendingToolCalls holds running calls as a new set per change and is empty after the run", async () => {
    const bothRunning = deferred();
    let running = 0;
    const seenInside: string[][] = [];
    const tool = createTool("work", async () => {
      if (++running === 2) bothRunning.resolve();
      await bothRunning.promise;
      seenInside.push([...agent.state.pendingToolCalls]);
      return textResult("ok");
    });
    const model = new ScriptedModel([
      {
        toolCalls: [
          { id: "A", name: "work", arguments: {} },
          { id: "B", name: "work", arguments: {} },
        ],
      },
      { text: "done" },
    ]);
    const agent = new Agent({ initialState: { model: TEST_MODEL, tools: [tool] }, streamFn: model.streamFn });
    const sets: ReadonlySet<string>[] = [];
    const snapshots: string[] = [];
    agent.subscribe((event) => {
      if (event.type === "tool_execution_start" || event.type === "tool_execution_end") {
        sets.push(agent.state.pendingToolCalls);
        snapshots.push(`${event.type}:${[...agent.state.pendingToolCalls].join(",")}`);
      }
    });
    await agent.prompt("go");
    expect(snapshots).toEqual([
      "tool_execution_start:A",
      "tool_execution_start:A,B",
      "tool_execution_end:B",
      "tool_execution_end:",
    ]);
    expect(seenInside[0]).toEqual(["A", "B"]);
    expect(new Set(sets).size).toBe(4);
    expect(agent.state.pendingToolCalls.size).toBe(0);
  });

  it("isStreaming is set synchronously by prompt() and false once waitForIdle resolves after agent_end listeners", async () => {
    const model = new ScriptedModel([{ text: "x" }]);
    const agent = new Agent({ initialState: { model: TEST_MODEL }, streamFn: model.streamFn });
    const log: string[] = [];
    agent.subscribe(async (event) => {
      if (event.type === "agent_end") {
        await flushMacrotask();
        log.push(`agent_end listener done, streaming=${agent.state.isStreaming}`);
      }
    });
    expect(agent.state.isStreaming).toBe(false);
    const run = agent.prompt("hi");
    expect(agent.state.isStreaming).toBe(true);
    expect(agent.signal).toBeInstanceOf(AbortSignal);
    await agent.waitForIdle();
    log.push(`idle, streaming=${agent.state.isStreaming}`);
    await run;
    expect(log).toEqual(["agent_end listener done, streaming=true", "idle, streaming=false"]);
    expect(agent.signal).toBeUndefined();
    await expect(agent.waitForIdle()).resolves.toBeUndefined();
  });

  it("listeners get the run's signal, in registration order, and can unsubscribe", async () => {
    const model = new ScriptedModel([{ text: "x" }, { text: "y" }]);
    const agent = new Agent({ initialState: { model: TEST_MODEL }, streamFn: model.streamFn });
    const order: string[] = [];
    const signals = new Set<AbortSignal>();
    const unsubscribe = agent.subscribe((event, signal) => {
      signals.add(signal);
      if (event.type === "agent_start") order.push("first");
    });
    agent.subscribe((event) => {
      if (event.type === "agent_start") order.push("second");
    });
    await agent.prompt("one");
    unsubscribe();
    await agent.prompt("two");
    expect(order).toEqual(["first", "second", "second"]);
    expect(signals.size).toBe(1);
    // Deviation 6: a request gets a signal of its own, linked to the run's (so an interrupt can abort only
    // the request); abort.test.ts proves the run's abort reaches it.
    expect(model.requests[0]?.options.signal).toBeInstanceOf(AbortSignal);
    expect(model.requests[0]?.options.signal).not.toBe([...signals][0]);
  });
});

describe("Agent while running", () => {
  it("prompt() and continue() reject and reset() throws with the exact messages; nothing is queued", async () => {
    const { agent, model, running, release } = busyAgent();
    const run = agent.prompt("go");
    await running.promise;

    await expect(agent.prompt("again")).rejects.toThrow(PROMPT_BUSY);
    await expect(agent.continue()).rejects.toThrow(CONTINUE_BUSY);
    expect(() => agent.reset()).toThrow(RESET_BUSY);
    expect(agent.hasQueuedMessages()).toBe(false);

    release.resolve();
    await run;
    expect(model.requests).toHaveLength(2);
    expect(transcript(agent.state.messages)).toEqual([
      "user:go",
      "assistant:[t1]",
      "toolResult:t1:waited",
      "assistant:done",
    ]);
  });

  it("a run snapshots its inputs: state changes during a run apply to the next run", async () => {
    const { agent, model, running, release } = busyAgent();
    const run = agent.prompt("go");
    await running.promise;
    agent.state.systemPrompt = "changed";
    agent.state.model = { ...TEST_MODEL, id: "other" };
    release.resolve();
    await run;
    model.push({ text: "later" });
    await agent.prompt("next");
    expect(model.requests.map((request) => `${request.model.id}:${request.systemPrompt}`)).toEqual([
      "scripted:sys",
      "scripted:sys",
      "other:changed",
    ]);
  });

  it("reset() when idle clears transcript, error and queues but keeps model, tools and prompt", async () => {
    const model = new ScriptedModel([{ text: "x", stopReason: "error", errorMessage: "HTTP 500" }]);
    const echo = echoTool();
    const agent = new Agent({
      initialState: { model: TEST_MODEL, tools: [echo], systemPrompt: "sys" },
      streamFn: model.streamFn,
    });
    await agent.prompt("hi");
    agent.steer(user("s"));
    agent.followUp(user("f"));
    expect(agent.state.errorMessage).toBe("HTTP 500");

    agent.reset();

    expect(agent.state.messages).toEqual([]);
    expect(agent.state.errorMessage).toBeUndefined();
    expect(agent.state.streamingMessage).toBeUndefined();
    expect(agent.state.pendingToolCalls.size).toBe(0);
    expect(agent.hasQueuedMessages()).toBe(false);
    expect(agent.state.model).toBe(TEST_MODEL);
    expect(agent.state.tools).toEqual([echo]);
    expect(agent.state.systemPrompt).toBe("sys");
  });

  it("abort() while idle is a no-op", async () => {
    const model = new ScriptedModel([{ text: "x" }]);
    const agent = new Agent({ initialState: { model: TEST_MODEL }, streamFn: model.streamFn });
    agent.abort();
    await agent.prompt("hi");
    expect(transcript(agent.state.messages)).toEqual(["user:hi", "assistant:x"]);
  });
});

describe("Agent listener failures (§10.5)", () => {
  it("a listener that throws once turns the run into a failure message; prompt() resolves", async () => {
    const model = new ScriptedModel([{ text: "never" }]);
    const agent = new Agent({ initialState: { model: TEST_MODEL }, streamFn: model.streamFn });
    const { events, shorts } = recordAgent(agent);
    let thrown = false;
    agent.subscribe((event) => {
      if (event.type === "message_end" && !thrown) {
        thrown = true;
        throw new Error("listener boom");
      }
    });

    await expect(agent.prompt("hi")).resolves.toBeUndefined();

    expect(shorts).toEqual([
      "agent_start",
      "turn_start",
      ...promptEvents("hi"),
      "message_start(assistant)",
      "message_end(assistant:error)",
      "turn_end()",
      "agent_end",
    ]);
    expect(model.requests).toHaveLength(0);
    const failure = agent.state.messages.at(-1);
    expect(failure).toMatchObject({
      role: "assistant",
      content: [{ type: "text", text: "" }],
      stopReason: "error",
      errorMessage: "listener boom",
      api: TEST_MODEL.api,
      provider: TEST_MODEL.provider,
      model: TEST_MODEL.id,
    });
    const end = events.at(-1) as Extract<AgentEvent, { type: "agent_end" }>;
    expect(end.messages).toEqual([failure]);
    expect(agent.state.errorMessage).toBe("listener boom");
    expect(agent.state.isStreaming).toBe(false);
  });

  it("a listener that always throws makes prompt() reject and leaves errorMessage unset", async () => {
    const model = new ScriptedModel([{ text: "never" }]);
    const agent = new Agent({ initialState: { model: TEST_MODEL }, streamFn: model.streamFn });
    const { shorts } = recordAgent(agent);
    let count = 0;
    agent.subscribe(() => {
      throw new Error(`listener boom ${++count}`);
    });

    await expect(agent.prompt("hi")).rejects.toThrow("listener boom 2");

    expect(shorts).toEqual(["agent_start", "message_start(assistant)"]);
    expect(agent.state.errorMessage).toBeUndefined();
    expect(agent.state.isStreaming).toBe(false);
    expect(model.requests).toHaveLength(0);
  });

  it("a listener throwing on a tool update fails the run without an unhandled rejection", async () => {
    const release = deferred();
    const tool = createTool("work", async (_id, _params, _signal, onUpdate) => {
      onUpdate?.(textResult("progress"));
      // Settle only after a macrotask, so a rejected update left unobserved would be reported.
      await release.promise;
      return textResult("ok");
    });
    const model = new ScriptedModel([
      { toolCalls: [{ id: "t1", name: "work", arguments: {} }] },
      { text: "never" },
    ]);
    const agent = new Agent({ initialState: { model: TEST_MODEL, tools: [tool] }, streamFn: model.streamFn });
    const { shorts } = recordAgent(agent);
    agent.subscribe((event) => {
      if (event.type === "tool_execution_update") {
        setImmediate(() => release.resolve());
        throw new Error("update listener boom");
      }
    });

    await agent.prompt("go");
    await flushMacrotask();

    expect(shorts).toEqual([
      "agent_start",
      "turn_start",
      ...promptEvents("go"),
      ...toolCallReply(1),
      "tool_execution_start(t1)",
      "tool_execution_update(t1)",
      "message_start(assistant)",
      "message_end(assistant:error)",
      "turn_end()",
      "agent_end",
    ]);
    expect(agent.state.errorMessage).toBe("update listener boom");
    expect(model.requests).toHaveLength(1);
  });
});

describe("Agent prompts", () => {
  it("prompt(text, images) builds one user message; state.messages assignment copies the array", async () => {
    const model = new ScriptedModel([{ text: "seen" }]);
    const agent = new Agent({ initialState: { model: TEST_MODEL }, streamFn: model.streamFn });
    const { shorts } = recordAgent(agent);
    await agent.prompt("look", [{ type: "image", data: "aGk=", mimeType: "image/png" }]);
    expect(shorts).toEqual([
      "agent_start",
      "turn_start",
      ...promptEvents("look"),
      ...textReply(),
      "turn_end()",
      "agent_end",
    ]);
    expect(model.requests[0]?.messages[0]).toMatchObject({
      role: "user",
      content: [
        { type: "text", text: "look" },
        { type: "image", data: "aGk=", mimeType: "image/png" },
      ],
    });
    const replacement = [user("a")];
    agent.state.messages = replacement;
    replacement.push(user("b"));
    expect(transcript(agent.state.messages)).toEqual(["user:a"]);
  });
});
