import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import type { AgentToolResult, ToolResultMessage } from "../../src/agent/index.js";
import type { ApprovalCard } from "../../src/chat/index.js";
import {
  bindTools,
  defineTool,
  fetchUrlTool,
  shellTool,
  type ToolApprovalContext,
  type ToolContext,
  ToolDefinitionError,
  ToolError,
} from "../../src/tools/index.js";
import { alice, RunsHarness } from "../runs/harness.js";
import { call, scope, textOf } from "./helpers.js";

const echoSpec = () => ({
  name: "echo",
  description: "Echoes.",
  parameters: z.object({ text: z.string() }),
  execute: async ({ text }: { text: string }) => text,
});
const echo = defineTool(echoSpec());

describe("defineTool", () => {
  it("lists every problem of a malformed definition in plain words", () => {
    let error: unknown;
    try {
      defineTool({
        name: "get weather!",
        description: " ",
        parameters: { city: "string" } as never,
        approval: "sometimes" as never,
        executionMode: "fast" as never,
        execute: undefined as never,
      });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ToolDefinitionError);
    expect((error as ToolDefinitionError).problems).toEqual([
      'name must be 1–64 letters, digits, "_" or "-", for example "get_weather" (the model calls the tool by it)',
      'description must be a sentence telling the model what the tool does, for example "Looks up…"',
      "parameters must be a zod object, for example z.object({ city: z.string() })",
      'approval must be "never", "ask" or a function (args, ctx) => "never" | "ask"',
      'executionMode must be "parallel" or "sequential"',
      "execute must be a function (args, ctx) => result",
    ]);
    expect((error as Error).message).toMatch(/^Tool "get weather!" is not valid: name must be/);
  });

  it("binds to a run: execute gets the thread, the requester, the workspace, the signal and onUpdate", async () => {
    let seen: ToolContext | undefined;
    const tool = defineTool({
      name: "inspect",
      description: "Looks at its context.",
      parameters: z.object({}),
      executionMode: "sequential",
      execute: async (_args, ctx) => {
        seen = ctx;
        ctx.onUpdate("halfway");
        return "ok";
      },
    });
    const updates: AgentToolResult[] = [];
    const controller = new AbortController();
    const bound = tool.forRun(scope("/tmp/ws-1"));
    expect(bound).toMatchObject({
      name: "inspect",
      label: "inspect",
      approval: "never",
      executionMode: "sequential",
    });
    await bound.execute("call-7", {}, controller.signal, (update) => updates.push(update));
    expect(seen).toMatchObject({
      toolCallId: "call-7",
      threadId: "slack:T1:C1:1700000000.000100",
      thread: { platform: "slack", channel: "C1" },
      runId: "run-1",
      user: { id: "U_ALICE", name: "Alice" },
      workspaceDir: "/tmp/ws-1",
    });
    expect(seen?.signal).toBe(controller.signal);
    expect(updates).toEqual([{ content: [{ type: "text", text: "halfway" }], details: {} }]);
  });

  it("turns what execute returns into a tool result", async () => {
    const returning = (value: unknown) =>
      defineTool({
        name: "r",
        description: "Returns.",
        parameters: z.object({}),
        execute: async () => value as never,
      });
    expect(textOf(await call(returning("plain"), {}))).toBe("plain");
    expect(textOf(await call(returning({ tempC: 21 }), {}))).toBe('{\n  "tempC": 21\n}');
    const full = { content: [{ type: "text", text: "full" }], details: { raw: 1 } };
    expect(await call(returning(full), {})).toEqual(full);
    expect(textOf(await call(returning(undefined), {}))).toBe("(done, no output)");
  });

  it("turns failures into readable messages: ToolError as is, others prefixed, aborts as stopped", async () => {
    const failing = (error: Error) =>
      defineTool({
        name: "flaky",
        description: "Fails.",
        parameters: z.object({}),
        execute: async () => {
          throw error;
        },
      });
    await expect(call(failing(new ToolError("No city called Atlantis.")), {})).rejects.toThrow(
      /^No city called Atlantis\.$/,
    );
    await expect(call(failing(new TypeError("x is undefined")), {})).rejects.toThrow(
      /^flaky failed: x is undefined$/,
    );
    const controller = new AbortController();
    controller.abort();
    await expect(call(failing(new Error("AbortError")), {}, { signal: controller.signal })).rejects.toThrow(
      "flaky was stopped before it finished (the run was stopped).",
    );
  });

  it("interruptible reaches the bound tool; fetch_url is interruptible, shell only when the operator says so", () => {
    const waiting = defineTool({ ...echoSpec(), name: "wait_for", interruptible: true });
    expect(waiting.interruptible).toBe(true);
    expect(waiting.forRun(scope("/tmp")).interruptible).toBe(true);
    expect(echo.forRun(scope("/tmp")).interruptible).toBeUndefined();
    expect(fetchUrlTool().forRun(scope("/tmp")).interruptible).toBe(true);
    expect(shellTool({ sandbox: "none" }).forRun(scope("/tmp")).interruptible).toBeUndefined();
    expect(shellTool({ sandbox: "none", interruptible: true }).forRun(scope("/tmp")).interruptible).toBe(
      true,
    );
    expect(() => defineTool({ ...echoSpec(), interruptible: "yes" as never })).toThrow(
      "interruptible must be true or false",
    );
  });

  it('approvalTimeoutMs (ms or "none") reaches the bound tool; anything else is refused', () => {
    const patient = defineTool({
      ...echoSpec(),
      name: "patient",
      approval: "ask",
      approvalTimeoutMs: "none",
    });
    expect(patient.forRun(scope("/tmp")).approvalTimeoutMs).toBe("none");
    expect(patient.withApproval("never").forRun(scope("/tmp")).approvalTimeoutMs).toBe("none");
    const quick = defineTool({ ...echoSpec(), name: "quick", approvalTimeoutMs: 30_000 });
    expect(quick.forRun(scope("/tmp")).approvalTimeoutMs).toBe(30_000);
    expect(echo.forRun(scope("/tmp")).approvalTimeoutMs).toBeUndefined();
    for (const bad of [0, -5, Number.POSITIVE_INFINITY, "never"]) {
      expect(() => defineTool({ ...echoSpec(), approvalTimeoutMs: bad as never })).toThrow(
        'approvalTimeoutMs must be a positive number of milliseconds or "none"',
      );
    }
  });

  it("withApproval returns a copy with another policy", () => {
    const asking = echo.withApproval("ask");
    expect(asking.forRun(scope("/tmp")).approval).toBe("ask");
    expect(echo.forRun(scope("/tmp")).approval).toBe("never");
  });
});

describe("approval policies through the run's beforeToolCall", () => {
  let h: RunsHarness;
  afterEach(async () => {
    await h?.close();
  });

  it("a policy function sees the arguments and the requester; 'ask' posts a card, 'never' runs at once", async () => {
    const decisions: { env: string; user: string }[] = [];
    const executed: string[] = [];
    const deploy = defineTool({
      name: "deploy",
      description: "Deploys the app.",
      parameters: z.object({ env: z.enum(["staging", "prod"]) }),
      approval: ({ env }, ctx: ToolApprovalContext) => {
        decisions.push({ env, user: ctx.user.name });
        return env === "prod" ? "ask" : "never";
      },
      execute: async ({ env }) => {
        executed.push(env);
        return `deployed to ${env}`;
      },
    });
    h = await new RunsHarness({
      agent: { tools: (ctx) => bindTools([deploy], { ...ctx, workspaceDir: "/tmp/unused" }) },
      script: [
        { toolCalls: [{ id: "c1", name: "deploy", arguments: { env: "staging" } }] },
        { toolCalls: [{ id: "c2", name: "deploy", arguments: { env: "prod" } }] },
        { text: "both done" },
      ],
    }).start();
    const thread = h.thread();
    const runId = await h.mention(thread, "ship it", alice);
    await h.chat.waitFor((chat) => chat.ops.some((op) => op.op === "postApproval"));
    expect(executed).toEqual(["staging"]);
    const cards = h.chat.ops.filter((op) => op.op === "postApproval").map((op) => op.card as ApprovalCard);
    expect(cards).toHaveLength(1);
    expect(cards[0]).toMatchObject({ toolName: "deploy" });
    expect(cards[0]!.argumentsText).toContain("prod");
    expect(await h.intake.decide(thread, cards[0]!.approvalId, alice, "approve")).toMatchObject({
      kind: "accepted",
    });
    await h.runFinished(runId);
    expect(executed).toEqual(["staging", "prod"]);
    expect(decisions).toEqual([
      { env: "staging", user: "Alice" },
      { env: "prod", user: "Alice" },
    ]);
    const results = h.model.requests[2]!.messages.filter(
      (m): m is ToolResultMessage => m.role === "toolResult",
    );
    expect(results.map((r) => r.content)).toEqual([
      [{ type: "text", text: "deployed to staging" }],
      [{ type: "text", text: "deployed to prod" }],
    ]);
  });

  it("a policy function that throws blocks the call with a readable reason", async () => {
    const risky = defineTool({
      name: "risky",
      description: "Needs a policy.",
      parameters: z.object({}),
      approval: () => {
        throw new Error("policy service unavailable");
      },
      execute: async () => "ran",
    });
    h = await new RunsHarness({
      agent: { tools: (ctx) => bindTools([risky], { ...ctx, workspaceDir: "/tmp/unused" }) },
      script: [{ toolCalls: [{ id: "c1", name: "risky", arguments: {} }] }, { text: "ok" }],
    }).start();
    const runId = await h.mention(h.thread(), "try it");
    await h.runFinished(runId);
    const result = h.model.requests[1]!.messages.find(
      (m): m is ToolResultMessage => m.role === "toolResult",
    )!;
    expect(result.isError).toBe(true);
    expect(result.content).toEqual([{ type: "text", text: "policy service unavailable" }]);
  });
});
