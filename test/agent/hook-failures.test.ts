import { describe, expect, it } from "vitest";
import {
  type AgentLoopConfig,
  type AgentMessage,
  type AssistantMessage,
  agentLoop,
  runAgentLoop,
  type StreamFn,
} from "../../src/agent/index.js";
import { ScriptedModel, TEST_MODEL, zeroUsage } from "../fakes/scripted-model.js";
import {
  collect,
  ECHO_TURN_EVENTS,
  ECHO_TURN_SCRIPT,
  echoTool,
  loopConfig,
  promptEvents,
  short,
  textReply,
  transcript,
  user,
} from "./helpers.js";

describe("hooks that must not throw still end the run (deviation 5)", () => {
  const FAILS_FIRST_TURN = [
    "agent_start",
    "turn_start",
    ...promptEvents("go"),
    "message_start(assistant)",
    "message_end(assistant:error)",
    "turn_end()",
    "agent_end",
  ];
  const FAILS_SECOND_TURN = [
    ...ECHO_TURN_EVENTS,
    "turn_start",
    "message_start(assistant)",
    "message_end(assistant:error)",
    "turn_end()",
    "agent_end",
  ];
  const FAILS_AFTER_TEXT_TURN = [
    ...ECHO_TURN_EVENTS,
    "turn_start",
    ...textReply(),
    "turn_end()",
    "turn_start",
    "message_start(assistant)",
    "message_end(assistant:error)",
    "turn_end()",
    "agent_end",
  ];

  /** Makes a hook that throws on its `nth` call (1-based) and otherwise returns `value()`. */
  function throwsOn<A extends unknown[], R>(
    nth: number,
    value: (...args: A) => R,
    error: unknown = new Error("hook boom"),
  ) {
    let calls = 0;
    return (...args: A): R => {
      if (++calls === nth) throw error;
      return value(...args);
    };
  }
  const defaultConvert = loopConfig().convertToLlm;

  interface Case {
    name: string;
    config: (streamFn: StreamFn) => { overrides: Partial<AgentLoopConfig>; streamFn: StreamFn };
    events: string[];
    requests: number;
    message?: string;
  }
  // Hooks are built per test: `throwsOn` counts calls.
  const plain = (overrides: () => Partial<AgentLoopConfig>) => (streamFn: StreamFn) => ({
    overrides: overrides(),
    streamFn,
  });
  const cases: Case[] = [
    {
      name: "transformContext (first request)",
      config: plain(() => ({ transformContext: throwsOn(1, async (messages: AgentMessage[]) => messages) })),
      events: FAILS_FIRST_TURN,
      requests: 0,
    },
    {
      name: "transformContext (rejecting, second request)",
      config: plain(() => ({
        transformContext: async (messages) => {
          if (messages.length > 1) throw new Error("hook boom");
          return messages;
        },
      })),
      events: FAILS_SECOND_TURN,
      requests: 1,
    },
    {
      name: "convertToLlm",
      config: plain(() => ({ convertToLlm: throwsOn(1, defaultConvert) })),
      events: FAILS_FIRST_TURN,
      requests: 0,
    },
    {
      name: "convertToLlm throwing a non-Error",
      config: plain(() => ({ convertToLlm: throwsOn(1, defaultConvert, "plain string") })),
      events: FAILS_FIRST_TURN,
      requests: 0,
      message: "plain string",
    },
    {
      name: "getApiKey",
      config: plain(() => ({
        getApiKey: async () => {
          throw new Error("hook boom");
        },
      })),
      events: FAILS_FIRST_TURN,
      requests: 0,
    },
    {
      name: "the stream function",
      config: (streamFn) => ({ overrides: {}, streamFn: throwsOn(1, streamFn) }),
      events: FAILS_FIRST_TURN,
      requests: 0,
    },
    {
      name: "the stream function (rejecting, second request)",
      config: (streamFn) => {
        let calls = 0;
        return {
          overrides: {},
          streamFn: async (...args: Parameters<StreamFn>) => {
            if (++calls === 2) throw new Error("hook boom");
            return streamFn(...args);
          },
        };
      },
      events: FAILS_SECOND_TURN,
      requests: 1,
    },
    {
      name: "getSteeringMessages (initial poll)",
      config: plain(() => ({ getSteeringMessages: throwsOn(1, async () => []) })),
      events: FAILS_FIRST_TURN,
      requests: 0,
    },
    {
      name: "getSteeringMessages (after a turn)",
      config: plain(() => ({ getSteeringMessages: throwsOn(2, async () => []) })),
      events: FAILS_SECOND_TURN,
      requests: 1,
    },
    {
      name: "getFollowUpMessages",
      config: plain(() => ({ getFollowUpMessages: throwsOn(1, async () => []) })),
      events: FAILS_AFTER_TEXT_TURN,
      requests: 2,
    },
    {
      name: "prepareNextTurn",
      config: plain(() => ({ prepareNextTurn: throwsOn(1, () => undefined) })),
      events: FAILS_SECOND_TURN,
      requests: 1,
    },
    {
      name: "shouldStopAfterTurn",
      config: plain(() => ({ shouldStopAfterTurn: throwsOn(1, () => false) })),
      events: FAILS_SECOND_TURN,
      requests: 1,
    },
  ];

  function expectFailure(events: string[], messages: AgentMessage[], testCase: Case): void {
    expect(events).toEqual(testCase.events);
    expect(events.filter((event) => event === "turn_start")).toHaveLength(
      events.filter((event) => event.startsWith("turn_end")).length,
    );
    const last = messages.at(-1) as AssistantMessage;
    expect(last).toMatchObject({
      role: "assistant",
      content: [{ type: "text", text: "" }],
      stopReason: "error",
      errorMessage: testCase.message ?? "hook boom",
      api: TEST_MODEL.api,
      provider: TEST_MODEL.provider,
      model: TEST_MODEL.id,
      usage: zeroUsage(),
    });
    expect(messages.filter((message) => (message as { role: string }).role === "assistant")).toHaveLength(
      events.filter((event) => event.startsWith("message_end(assistant")).length,
    );
  }

  for (const testCase of cases) {
    it(`${testCase.name}: runAgentLoop resolves after an error message and agent_end`, async () => {
      const model = new ScriptedModel(ECHO_TURN_SCRIPT);
      const { overrides, streamFn } = testCase.config(model.streamFn);
      const events: string[] = [];
      const messages = await runAgentLoop(
        [user("go")],
        { systemPrompt: "", messages: [], tools: [echoTool()] },
        loopConfig(overrides),
        (event) => {
          events.push(short(event));
        },
        undefined,
        streamFn,
      );
      expectFailure(events, messages, testCase);
      expect(transcript(messages)[0]).toBe("user:go");
      expect(model.requests).toHaveLength(testCase.requests);
    });

    it(`${testCase.name}: the agentLoop stream ends with agent_end and result()`, async () => {
      const model = new ScriptedModel(ECHO_TURN_SCRIPT);
      const { overrides, streamFn } = testCase.config(model.streamFn);
      const stream = agentLoop(
        [user("go")],
        { systemPrompt: "", messages: [], tools: [echoTool()] },
        loopConfig(overrides),
        undefined,
        streamFn,
      );
      const events = await collect(stream);
      const messages = await stream.result();
      const end = events.at(-1);
      expect(end?.type === "agent_end" ? end.messages : undefined).toBe(messages);
      expectFailure(events.map(short), messages, testCase);
    });
  }
});
