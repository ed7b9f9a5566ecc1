import { describe, expect, it } from "vitest";
import { z } from "zod";
import { Agent, type AgentOptions, type AnyAgentTool } from "../../src/agent/index.js";
import { ScriptedModel, TEST_MODEL } from "../fakes/scripted-model.js";
import { createTool, oneCallThenText, recordAgent, textOf, textResult, transcript } from "./helpers.js";

/** Runs one call of `tool` with `args`, then a text reply. */
async function runOneCall(
  tool: AnyAgentTool,
  args: Record<string, unknown>,
  options: Pick<AgentOptions, "beforeToolCall"> = {},
) {
  const model = new ScriptedModel([
    { toolCalls: [{ id: "t1", name: tool.name, arguments: args }] },
    { text: "ok" },
  ]);
  const agent = new Agent({
    initialState: { model: TEST_MODEL, tools: [tool] },
    streamFn: model.streamFn,
    ...options,
  });
  const recorded = recordAgent(agent);
  await agent.prompt("go");
  const start = recorded.events.find((event) => event.type === "tool_execution_start");
  const toolResult = model.requests[1]?.messages.find((message) => message.role === "toolResult");
  return { agent, model, ...recorded, start, toolResult };
}

describe("argument coercion", () => {
  it('coerces "5" → 5 and "true" → true, drops unknown keys; start event and hook see the raw arguments', async () => {
    const tool = createTool("calc", undefined, {
      parameters: z.object({ n: z.number(), flag: z.boolean(), label: z.string().optional() }),
    });
    const raw = { n: "5", flag: "true", junk: "drop me" };
    const seen: { raw: unknown; args: unknown }[] = [];
    const run = await runOneCall(tool, raw, {
      beforeToolCall: ({ toolCall, args }) => {
        seen.push({ raw: structuredClone(toolCall.arguments), args: structuredClone(args) });
        return undefined;
      },
    });

    expect(run.shorts).toEqual(oneCallThenText("t1", false));
    expect(tool.calls).toEqual([{ id: "t1", params: { n: 5, flag: true } }]);
    expect(run.start).toMatchObject({ args: { n: "5", flag: "true", junk: "drop me" } });
    expect(seen).toEqual([{ raw: { n: "5", flag: "true", junk: "drop me" }, args: { n: 5, flag: true } }]);
    // The model's own arguments are left untouched in the transcript.
    expect(run.model.requests[1]?.messages[1]).toMatchObject({
      content: [{ type: "toolCall", arguments: { n: "5", flag: "true", junk: "drop me" } }],
    });
  });

  it('coerces "false", numeric strings inside arrays and numbers into string fields', async () => {
    const tool = createTool("mix", undefined, {
      parameters: z.object({ on: z.boolean(), list: z.array(z.number()), name: z.string() }),
    });
    const run = await runOneCall(tool, { on: "false", list: ["1", "2.5"], name: 42 });
    expect(run.shorts).toEqual(oneCallThenText("t1", false));
    expect(tool.calls[0]?.params).toEqual({ on: false, list: [1, 2.5], name: "42" });
  });
});

describe("prepareArguments", () => {
  it("runs on the raw arguments before validation, then beforeToolCall, then execute", async () => {
    const order: string[] = [];
    const tool = createTool(
      "calc",
      async (_id, params) => {
        order.push("execute");
        return textResult(`n=${String(params.n)}`);
      },
      {
        parameters: z.object({ n: z.number() }),
        prepareArguments: (args) => {
          order.push(`prepare:${JSON.stringify(args)}`);
          return "count" in args ? { n: args.count } : args;
        },
      },
    );
    const run = await runOneCall(
      tool,
      { count: "7" },
      {
        beforeToolCall: ({ toolCall, args }) => {
          order.push(`before:${JSON.stringify(toolCall.arguments)}->${JSON.stringify(args)}`);
          return undefined;
        },
      },
    );
    expect(run.shorts).toEqual(oneCallThenText("t1", false));
    expect(order).toEqual(['prepare:{"count":"7"}', 'before:{"count":"7"}->{"n":7}', "execute"]);
    expect(transcript(run.agent.state.messages)[2]).toBe("toolResult:t1:n=7");
  });

  it("a validation failure after prepareArguments shows the raw arguments, not the prepared ones", async () => {
    const tool = createTool("calc", undefined, {
      parameters: z.object({ n: z.number() }),
      prepareArguments: (args) => ({ n: args.count }),
    });
    const run = await runOneCall(tool, { count: "seven" });
    expect(run.shorts).toEqual(oneCallThenText("t1", true));
    expect(tool.calls).toEqual([]);
    expect(transcript(run.toolResult ? [run.toolResult] : [])).toEqual([
      [
        'toolResult:t1:error:Validation failed for tool "calc":',
        "  - n: Invalid input: expected number, received string",
        "",
        "Received arguments:",
        "{",
        '  "count": "seven"',
        "}",
      ].join("\n"),
    ]);
  });

  it("a throwing prepareArguments becomes an error result with the thrown message", async () => {
    const tool = createTool("calc", undefined, {
      prepareArguments: () => {
        throw new Error("cannot prepare");
      },
    });
    const run = await runOneCall(tool, { text: "x" });
    expect(run.shorts).toEqual(oneCallThenText("t1", true));
    expect(tool.calls).toEqual([]);
    expect(transcript(run.toolResult ? [run.toolResult] : [])).toEqual([
      "toolResult:t1:error:cannot prepare",
    ]);
  });
});

describe("validation failure text", () => {
  it("lists one line per issue with dot paths, a blank line and the raw arguments as 2-space JSON", async () => {
    const tool = createTool("batch", undefined, {
      parameters: z.object({ items: z.array(z.object({ n: z.number() })), mode: z.enum(["a", "b"]) }),
    });
    const run = await runOneCall(tool, { items: [{ n: 1 }, { n: "x" }], mode: "c" });
    expect(run.shorts).toEqual(oneCallThenText("t1", true));
    const [header, receivedBlock, rest] = textOf(run.toolResult).split("\n\n");
    expect(header?.split("\n")).toEqual([
      'Validation failed for tool "batch":',
      "  - items.1.n: Invalid input: expected number, received string",
      '  - mode: Invalid option: expected one of "a"|"b"',
    ]);
    expect(receivedBlock).toBe(
      `Received arguments:\n${JSON.stringify({ items: [{ n: 1 }, { n: "x" }], mode: "c" }, null, 2)}`,
    );
    expect(rest).toBeUndefined();
    expect(tool.calls).toEqual([]);
  });

  it("uses the path root for an issue on the arguments object itself", async () => {
    const tool = createTool("either", undefined, {
      parameters: z
        .object({ a: z.string().optional(), b: z.string().optional() })
        .refine((value) => value.a !== undefined || value.b !== undefined, "need a or b"),
    });
    const run = await runOneCall(tool, { c: 1 });
    expect(run.shorts).toEqual(oneCallThenText("t1", true));
    expect(textOf(run.toolResult)).toBe(
      'Validation failed for tool "either":\n  - root: need a or b\n\nReceived arguments:\n{\n  "c": 1\n}',
    );
    expect(run.toolResult).toMatchObject({ isError: true, details: {} });
  });

  it("arguments mutated in beforeToolCall reach execute without revalidation", async () => {
    const tool = createTool("calc", undefined, { parameters: z.object({ n: z.number() }) });
    const run = await runOneCall(
      tool,
      { n: 1 },
      {
        beforeToolCall: ({ args }) => {
          args.n = "not a number";
          args.extra = true;
          return undefined;
        },
      },
    );
    expect(run.shorts).toEqual(oneCallThenText("t1", false));
    expect(tool.calls[0]?.params).toEqual({ n: "not a number", extra: true });
  });
});
