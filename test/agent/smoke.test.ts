import { describe, expect, it } from "vitest";
import { z } from "zod";
import { Agent, type AgentEvent, type AnyAgentTool } from "../../src/agent/index.js";
import { ScriptedModel, TEST_MODEL } from "../fakes/scripted-model.js";

const echo: AnyAgentTool = {
  name: "echo",
  description: "echo",
  parameters: z.object({ text: z.string() }),
  execute: async (_id, params: { text: string }) => ({
    content: [{ type: "text", text: params.text }],
    details: {},
  }),
};

function short(event: AgentEvent): string {
  if (event.type === "message_start" || event.type === "message_end") {
    return `${event.type}(${(event.message as { role: string }).role})`;
  }
  if (event.type === "message_update") return `message_update(${event.assistantMessageEvent.type})`;
  if (event.type.startsWith("tool_execution"))
    return `${event.type}(${(event as { toolCallId: string }).toolCallId})`;
  return event.type;
}

describe("smoke", () => {
  it("runs one tool turn", async () => {
    const model = new ScriptedModel([
      { toolCalls: [{ id: "t1", name: "echo", arguments: { text: "hi" } }] },
      { text: ["do", "ne"] },
    ]);
    const agent = new Agent({ initialState: { model: TEST_MODEL, tools: [echo] }, streamFn: model.streamFn });
    const events: string[] = [];
    agent.subscribe((event) => {
      events.push(short(event));
    });
    await agent.prompt("go");
    expect(events).toEqual([
      "agent_start",
      "turn_start",
      "message_start(user)",
      "message_end(user)",
      "message_start(assistant)",
      "message_update(toolcall_start)",
      "message_update(toolcall_delta)",
      "message_update(toolcall_end)",
      "message_end(assistant)",
      "tool_execution_start(t1)",
      "tool_execution_end(t1)",
      "message_start(toolResult)",
      "message_end(toolResult)",
      "turn_end",
      "turn_start",
      "message_start(assistant)",
      "message_update(text_start)",
      "message_update(text_delta)",
      "message_update(text_delta)",
      "message_update(text_end)",
      "message_end(assistant)",
      "turn_end",
      "agent_end",
    ]);
    expect(model.requests[1]?.messages.map((m) => m.role)).toEqual(["user", "assistant", "toolResult"]);
    expect(agent.state.messages).toHaveLength(4);
  });
});
