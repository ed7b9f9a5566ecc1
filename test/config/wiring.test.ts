import { resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ToolResultMessage } from "../../src/agent/index.js";
import { restrictInbound } from "../../src/app/access.js";
import { agentSetupFromEnv } from "../../src/app/agent-setup.js";
import { connectConfiguredMcpServers } from "../../src/app/mcp.js";
import { runsConfigFromEnv } from "../../src/app/runs-config.js";
import type { ApprovalCard, ChatInbound, IncomingMessage, ThreadRef } from "../../src/chat/index.js";
import { type LoadedConfig, loadConfig } from "../../src/config/index.js";
import { type AgentSetup, SILENT_LOGGER, type ToolRunContext } from "../../src/runs/index.js";
import type { McpToolset } from "../../src/tools/index.js";
import { alice, RunsHarness } from "../runs/harness.js";

const FIXTURES = resolve(import.meta.dirname, "../fixtures/config");

let loaded: LoadedConfig;
let mcp: McpToolset;
let setup: AgentSetup;
let h: RunsHarness | undefined;

beforeAll(async () => {
  loaded = await loadConfig({
    env: { THREADLINE_WORKSPACE_DIR: "/tmp/threadline-wiring-test" },
    cwd: FIXTURES,
  });
  mcp = await connectConfiguredMcpServers(loaded.config, SILENT_LOGGER);
  setup = agentSetupFromEnv(loaded.env, [], { config: loaded.config, mcpTools: mcp.tools });
}, 30_000);

afterAll(async () => {
  await h?.close();
  await mcp?.close();
});

const ctx: ToolRunContext = {
  thread: { platform: "slack", workspace: "T1", channel: "C1", thread: "1.2" },
  threadId: "slack:T1:C1:1.2",
  runId: "r1",
  requester: alice,
};

describe("a config module wired into the worker's agent", () => {
  it("offers built-ins, the module's tools and the MCP server's tools, with the configured policies", () => {
    const tools = typeof setup.tools === "function" ? setup.tools(ctx) : setup.tools;
    expect(
      tools.map((tool) => [tool.name, typeof tool.approval === "function" ? "fn" : tool.approval]),
    ).toEqual([
      ["fetch_url", "ask"],
      ["read_file", "never"],
      ["write_file", "never"],
      ["list_files", "never"],
      ["edit_file", "never"],
      ["shell", "ask"],
      ["get_weather", "fn"],
      ["echo__echo", "ask"],
      ["echo__fail", "ask"],
      ["echo__env", "never"],
      ["echo__wait", "ask"],
      ["echo__pid", "ask"],
    ]);
    expect(typeof setup.systemPrompt === "function" && setup.systemPrompt(ctx)).toBe(
      "You help Alice's team.",
    );
    expect(setup.model.contextWindow).toBe(32_000);
    expect(setup.contextTransform).toBeTypeOf("function");
  });

  it("maps the runs settings and merges them with the environment", () => {
    const config = runsConfigFromEnv(loaded.env, loaded.config);
    expect(config).toMatchObject({
      defaultDisposition: "followUp",
      steeringMode: "all",
      followUpMode: "one-at-a-time",
      requireMentionWhenIdle: true,
      approvers: ["U_OPS"],
      budgets: { maxTurns: 10, maxWallMs: 15 * 60 * 1000 },
    });
    expect(config.reactions.stop).toBe("no_entry");
    expect(config.reactions.steer).toBe("compass");
  });

  it("in a thread: a 'never' tool runs at once, an MCP tool asks first, and both results reach the model", async () => {
    h = await new RunsHarness({
      agent: { tools: setup.tools, systemPrompt: setup.systemPrompt },
      script: [
        {
          toolCalls: [
            { id: "w", name: "get_weather", arguments: { city: "Paris" } },
            { id: "e", name: "echo__echo", arguments: { text: "ping", times: 2 } },
          ],
        },
        { text: "Paris is 21°C; the echo server says ping ping." },
      ],
    }).start();
    const thread = h.thread();
    const runId = await h.mention(thread, "weather and echo please", alice);
    await h.chat.waitFor((chat) => chat.ops.some((op) => op.op === "postApproval"));
    const cards = h.chat.ops.filter((op) => op.op === "postApproval").map((op) => op.card as ApprovalCard);
    expect(cards.map((card) => card.toolName)).toEqual(["echo__echo"]);
    await h.intake.decide(thread, cards[0]!.approvalId, alice, "approve");
    await h.runFinished(runId);
    const request = h.model.requests[1]!;
    expect(request.systemPrompt).toBe("You help Alice's team.");
    expect(request.toolNames).toContain("echo__echo");
    const results = request.messages.filter((m): m is ToolResultMessage => m.role === "toolResult");
    expect(results.map((r) => [r.toolName, r.isError, r.content])).toEqual([
      [
        "get_weather",
        false,
        [{ type: "text", text: '{\n  "city": "Paris",\n  "tempC": 21,\n  "askedBy": "Alice"\n}' }],
      ],
      ["echo__echo", false, [{ type: "text", text: "ping ping" }]],
    ]);
  });

  it("applies the allow lists before the gateway: other channels are ignored, approvals still pass", async () => {
    const seen: string[] = [];
    const inbound: ChatInbound = {
      message: async (message) => void seen.push(`message ${message.id}`),
      messageEdited: async (message) => void seen.push(`edit ${message.id}`),
      messageDeleted: async (_thread, id) => void seen.push(`delete ${id}`),
      reaction: async (event) => void seen.push(`reaction ${event.messageId}`),
      button: async (click) => {
        seen.push(`button ${click.approvalId}`);
        return { kind: "none" };
      },
    };
    const gate = restrictInbound(inbound, loaded.config.allow);
    const inC1: ThreadRef = { platform: "slack", workspace: "T1", channel: "C1", thread: "1" };
    const inC2: ThreadRef = { ...inC1, channel: "C2" };
    const message = (id: string, thread: ThreadRef): IncomingMessage => ({
      id,
      thread,
      author: alice,
      text: "hi",
      attachments: [],
      mentionsBot: true,
      sentAt: 0,
    });
    await gate.message(message("m1", inC1));
    await gate.message(message("m2", inC2));
    await gate.reaction({ thread: inC2, messageId: "m2", user: alice, emoji: "octagonal_sign", added: true });
    await gate.button({ thread: inC2, approvalId: "a1", user: alice, decision: "approve" });
    expect(seen).toEqual(["message m1", "button a1"]);
    expect(restrictInbound(inbound, undefined)).toBe(inbound);
  });
});
