import { afterAll, describe, expect, it } from "vitest";
import {
  type AssistantMessage,
  createAssistantMessageEventStream,
  type Model,
  type StreamFn,
} from "../../src/agent/index.js";
import { threadId } from "../../src/chat/index.js";
import { emptyUsage } from "../../src/llm/usage.js";
import { SpendLedger } from "../../src/runs/spend.js";
import { SpendMeter } from "../../src/runs/spend-meter.js";
import { connect, deletePrefix, requireRedis, uniquePrefix } from "../support/redis.js";

const redis = connect();
const prefix = uniquePrefix("spend-meter");
afterAll(async () => {
  await deletePrefix(redis, prefix);
  redis.disconnect();
});

const model: Model = {
  id: "m",
  name: "m",
  api: "openai-completions",
  provider: "test",
  contextWindow: 1000,
  maxTokens: 100,
};
const thread = { platform: "slack" as const, workspace: "T1", channel: "C1", thread: "1.0" };
const target = { threadId: threadId(thread), thread, requester: { id: "U1", name: "Ann", isBot: false } };
const silentLog = { info: () => {}, warn: () => {}, error: () => {} };

function answer(): AssistantMessage {
  return {
    role: "assistant",
    content: [{ type: "text", text: "hi" }],
    api: model.api,
    provider: model.provider,
    model: model.id,
    usage: { ...emptyUsage(), input: 40, output: 2 },
    stopReason: "stop",
    timestamp: 0,
  };
}

/** A model whose stream the test ends: it returns the stream it made, for identity checks. */
function streamingModel() {
  const streams: ReturnType<typeof createAssistantMessageEventStream>[] = [];
  const streamFn: StreamFn = () => {
    const stream = createAssistantMessageEventStream();
    streams.push(stream);
    return stream;
  };
  return { streamFn, streams };
}

describe("SpendMeter", () => {
  it("without caps hands the model's own stream through and records the response once it is done", async () => {
    await requireRedis(redis);
    const ledger = new SpendLedger(redis, `${prefix}:a`);
    const meter = new SpendMeter({
      ledger,
      target,
      prices: {},
      log: silentLog,
      capReached: () => {},
      fields: {},
    });
    const { streamFn, streams } = streamingModel();
    const wrapped = await meter.wrap(streamFn)(model, { systemPrompt: "", messages: [] }, {});
    // No second queue every event passes through: the very stream the model returned.
    expect(wrapped).toBe(streams[0]);
    const message = answer();
    streams[0]!.push({ type: "done", reason: "stop", message });
    await wrapped.result();
    await meter.settled();
    for (const scope of ["thread", "user", "channel", "workspace"] as const) {
      expect(await ledger.totals(scope, target)).toMatchObject({ tokens: 42, requests: 1 });
    }
  });

  it("with a cap admits each request first, so the stream is its own", async () => {
    const ledger = new SpendLedger(redis, `${prefix}:b`, { user: { tokens: 1000 } });
    const meter = new SpendMeter({
      ledger,
      target,
      prices: {},
      log: silentLog,
      capReached: () => {},
      fields: {},
    });
    const { streamFn, streams } = streamingModel();
    const wrapped = await meter.wrap(streamFn)(model, { systemPrompt: "", messages: [] }, {});
    expect(wrapped).not.toBe(streams[0]);
    const done = (async () => {
      for await (const event of wrapped) if (event.type === "done") return event.message;
      return undefined;
    })();
    while (streams.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    streams[0]!.push({ type: "done", reason: "stop", message: answer() });
    expect((await done)?.usage.output).toBe(2);
    // The response was settled before its done event was handed on.
    expect(await ledger.totals("user", target)).toMatchObject({ tokens: 42, requests: 1 });
  });
});
