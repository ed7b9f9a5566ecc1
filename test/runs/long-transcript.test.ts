import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type AgentMessage, defaultConvertToLlm } from "../../src/agent/index.js";
import { threadId } from "../../src/chat/index.js";
import { createContextManager } from "../../src/context/index.js";
import { SUMMARY_PREFIX } from "../../src/llm/context-summary.js";
import {
  CONTEXT_SUMMARY_ROLE,
  type ContextSummaryMessage,
  createTokenCounter,
  isContextSummary,
  messageFingerprint,
  messageTokens,
  type SummarizeInput,
} from "../../src/llm/index.js";
import { threadKeys } from "../../src/runs/keys.js";
import { Lease } from "../../src/runs/lease.js";
import { ThreadScripts } from "../../src/runs/thread-scripts.js";
import {
  loadRunTranscript,
  parseTranscript,
  ThreadStore,
  TranscriptCache,
} from "../../src/runs/thread-store.js";
import { TranscriptSink } from "../../src/runs/transcript-sink.js";
import { zeroUsage } from "../fakes/scripted-model.js";
import { connect, deletePrefix, requireRedis, uniquePrefix } from "../support/redis.js";
import { alice, RunsHarness } from "./harness.js";

/**
 * A transcript of `turns` user/assistant pairs as runs store it, with a context summary appended every
 * `every` pairs (covering all but the last `keep` messages), each with the position of the first message
 * it does not cover unless `positions` is false.
 */
function longTranscript(turns: number, every: number, keep: number, positions = true): string[] {
  const entries: string[] = [];
  const body: { message: AgentMessage; at: number }[] = [];
  const push = (message: AgentMessage) => {
    body.push({ message, at: entries.length });
    entries.push(JSON.stringify(message));
  };
  for (let i = 0; i < turns; i++) {
    push({
      role: "user",
      content: [{ type: "text", text: `Alice: question ${i} ${"why ".repeat(i % 7)}` }],
      timestamp: i,
    });
    push({
      role: "assistant",
      content: [{ type: "text", text: `answer ${i} ${"because ".repeat(i % 5)}` }],
      api: "scripted",
      provider: "scripted",
      model: "scripted",
      usage: zeroUsage(),
      stopReason: "stop",
      timestamp: i,
    });
    if ((i + 1) % every === 0 && body.length > keep) {
      const covered = body.length - keep;
      const summary: ContextSummaryMessage & { firstKeptAt?: number } = {
        role: CONTEXT_SUMMARY_ROLE,
        summary: `summary up to ${covered}`,
        covered,
        firstKept: messageFingerprint(body[covered]!.message),
        timestamp: i,
      };
      if (positions) summary.firstKeptAt = body[covered]!.at;
      entries.push(JSON.stringify(summary));
    }
  }
  return entries;
}

/** A store that counts what it reads beyond the start script's tail. */
function countingStore(store: ThreadStore) {
  const reads: [number, number][] = [];
  return {
    reads,
    transcriptRange: async (thread: string, from: number, to: number) => {
      reads.push([from, to]);
      return store.transcriptRange(thread, from, to);
    },
  };
}

describe("loadRunTranscript (real Redis)", () => {
  const prefix = uniquePrefix("longtx");
  const redis = connect();
  const store = new ThreadStore(redis, prefix);
  let seq = 0;
  const seed = async (entries: string[]) => {
    const thread = `slack:T1:C1:${prefix}-${seq++}`;
    const key = threadKeys(prefix, thread).transcript;
    for (let i = 0; i < entries.length; i += 500) await redis.rpush(key, ...entries.slice(i, i + 500));
    return thread;
  };
  /** What the start script answers with `tail`. */
  const startTail = async (thread: string, tail: number) => {
    const key = threadKeys(prefix, thread).transcript;
    const length = await redis.llen(key);
    const from = Math.max(0, length - tail);
    return { raw: await redis.lrange(key, from, -1), from };
  };

  beforeAll(async () => {
    await requireRedis(redis);
  });
  afterAll(async () => {
    await deletePrefix(redis, prefix);
    redis.disconnect();
  });

  it("starts at the first message the newest summary does not cover, reading nothing more when the tail holds it", async () => {
    const entries = longTranscript(2_000, 100, 40);
    const thread = await seed(entries);
    const { raw, from } = await startTail(thread, 300);
    const counting = countingStore(store);
    const loaded = await loadRunTranscript(counting, thread, raw, from, new TranscriptCache());
    expect(counting.reads).toEqual([]);
    const all = parseTranscript(entries);
    const newest = all.filter(isContextSummary).at(-1) as unknown as ContextSummaryMessage & {
      firstKeptAt: number;
    };
    expect(loaded.base).toBe(newest.firstKeptAt);
    expect(loaded.bodyBase).toBe(newest.covered);
    expect(loaded.messages).toHaveLength(entries.length - newest.firstKeptAt);
    // The newest summary counts from the loaded part's start; the other messages are as stored.
    const loadedNewest = loaded.messages.filter(isContextSummary).at(-1) as unknown as ContextSummaryMessage;
    expect(loadedNewest.covered).toBe(0);
    expect(loadedNewest.summary).toBe(newest.summary);
    expect(loaded.messages.filter((m) => !isContextSummary(m))).toEqual(
      all.slice(newest.firstKeptAt).filter((m) => !isContextSummary(m)),
    );
  });

  it("reads back only as far as the summary's first kept message when the tail is shorter", async () => {
    const entries = longTranscript(2_000, 100, 150);
    const thread = await seed(entries);
    const { raw, from } = await startTail(thread, 120);
    const counting = countingStore(store);
    const loaded = await loadRunTranscript(counting, thread, raw, from, new TranscriptCache());
    expect(counting.reads).toHaveLength(1);
    expect(counting.reads[0]![0]).toBe(loaded.base);
    expect(counting.reads[0]![1]).toBe(from);
    expect(loaded.base).toBeGreaterThan(entries.length - 400);
    const full = await loadRunTranscript(store, thread, entries, 0, new TranscriptCache());
    expect(full.base).toBe(loaded.base);
    expect(full.messages).toEqual(loaded.messages);
  });

  it("loads everything when there is no summary, no recorded position, or a summary that no longer matches", async () => {
    const plain = longTranscript(600, 10_000, 0);
    const old = longTranscript(600, 100, 40, false);
    const changed = longTranscript(600, 100, 40);
    // A summary whose first kept message is not the one stored there any more.
    const last = changed.findLastIndex((entry) => entry.includes(CONTEXT_SUMMARY_ROLE));
    const summary = JSON.parse(changed[last]!) as ContextSummaryMessage;
    changed[last] = JSON.stringify({ ...summary, firstKept: "0000000000000000" });
    for (const entries of [plain, old, changed]) {
      const thread = await seed(entries);
      const { raw, from } = await startTail(thread, 256);
      const loaded = await loadRunTranscript(store, thread, raw, from, new TranscriptCache());
      expect(loaded.base).toBe(0);
      expect(loaded.bodyBase).toBe(0);
      expect(loaded.messages).toEqual(parseTranscript(entries));
    }
  });

  it("gives the next load the same message objects for unchanged entries (their token counts are reused)", async () => {
    const entries = longTranscript(1_000, 100, 40);
    const thread = await seed(entries);
    const cache = new TranscriptCache();
    const first = await startTail(thread, 300);
    const a = await loadRunTranscript(store, thread, first.raw, first.from, cache);
    await redis.rpush(
      threadKeys(prefix, thread).transcript,
      JSON.stringify({ role: "user", content: "more", timestamp: 1 }),
    );
    const second = await startTail(thread, 300);
    const b = await loadRunTranscript(store, thread, second.raw, second.from, cache);
    expect(b.base).toBe(a.base);
    expect(b.messages).toHaveLength(a.messages.length + 1);
    for (let i = 0; i < a.messages.length; i++) {
      if (!isContextSummary(a.messages[i])) expect(b.messages[i]).toBe(a.messages[i]);
    }
  });
});

describe("TranscriptCache", () => {
  it("forgets the least recently loaded threads beyond its bound, and a changed entry is parsed anew", () => {
    const entry = (text: string) => JSON.stringify({ role: "user", content: text, timestamp: 0 });
    const cache = new TranscriptCache(100);
    const a = cache.parse("a", 0, [entry("a".repeat(30))]);
    const b = cache.parse("b", 0, [entry("b".repeat(30))]);
    expect(cache.parse("b", 0, [entry("b".repeat(30))])[0]).toBe(b[0]);
    expect(cache.parse("a", 0, [entry("a".repeat(30))])[0]).not.toBe(a[0]);
    const changed = cache.parse("a", 0, [entry("A".repeat(30))]);
    expect(changed[0]).toEqual({ role: "user", content: "A".repeat(30), timestamp: 0 });
  });
});

describe("what the model sees of a long thread", () => {
  let h: RunsHarness;
  afterEach(async () => {
    await h?.close();
  });

  /** The manager the worker uses and the one replaying the whole transcript: same options, own records. */
  function manager(window: number, summaries: SummarizeInput[], summarize: boolean) {
    return createContextManager({
      contextWindow: window,
      ...(summarize
        ? {
            summarize: async (input: SummarizeInput) => {
              summaries.push(input);
              return `summary of ${input.messages.length} messages`;
            },
          }
        : {}),
    });
  }

  const withoutSignal = (inputs: SummarizeInput[]) => inputs.map(({ signal: _, ...input }) => input);

  for (const [label, window, summarize] of [
    ["the newest stored summary and the messages after it", 100_000, true],
    ["a new summary on top of the stored one", 2_048, true],
    ["older turns left out with a note when summaries are off", 2_048, false],
  ] as const) {
    it(`is the same request as from the whole transcript: ${label}`, async () => {
      const workerSummaries: SummarizeInput[] = [];
      h = await new RunsHarness({
        agent: { contextTransform: manager(window, workerSummaries, summarize) },
        script: [{ text: "done" }],
      }).start();
      const thread = h.thread();
      const id = threadId(thread);
      const entries = longTranscript(3_000, 50, 400);
      for (let i = 0; i < entries.length; i += 500) {
        await h.redis.rpush(h.keys(thread).transcript, ...entries.slice(i, i + 500));
      }
      await h.runFinished(await h.mention(thread, "what now?", alice));

      // Replay the request from the whole stored transcript, as the worker built it before loading a tail.
      const stored = await h.store.loadTranscript(id);
      expect(stored[entries.length]).toMatchObject({ role: "user", chatMessageId: expect.any(String) });
      const replaySummaries: SummarizeInput[] = [];
      const appended: AgentMessage[] = [];
      const replay = manager(
        window,
        replaySummaries,
        summarize,
      )({
        systemPrompt: h.model.requests[0]!.systemPrompt,
        appendToTranscript: async (message) => {
          appended.push(message);
          return true;
        },
      });
      const expected = defaultConvertToLlm(await replay(stored.slice(0, entries.length + 1)));
      // A summary made now carries the time it was made: the one thing that differs between the two.
      const undated = (messages: unknown[]) =>
        messages.map((m) =>
          typeof (m as { content?: unknown }).content === "string" &&
          ((m as { content: string }).content as string).startsWith(SUMMARY_PREFIX) &&
          !label.startsWith("the newest")
            ? { ...(m as object), timestamp: 0 }
            : m,
        );
      expect(undated(h.model.requests[0]!.messages)).toEqual(undated(JSON.parse(JSON.stringify(expected))));
      expect(withoutSignal(workerSummaries)).toEqual(withoutSignal(replaySummaries));
      expect(replaySummaries.length).toBe(label.startsWith("a new summary") ? 1 : 0);

      // A summary made now is stored counted from the transcript's start, with its first kept position.
      const newSummaries = stored
        .slice(entries.length)
        .filter(isContextSummary) as unknown as (ContextSummaryMessage & {
        firstKeptAt: number;
      })[];
      expect(newSummaries).toHaveLength(appended.length);
      for (const [i, summary] of newSummaries.entries()) {
        const want = appended[i] as unknown as ContextSummaryMessage;
        expect({ ...summary, timestamp: 0, firstKeptAt: 0 }).toEqual({
          ...want,
          timestamp: 0,
          firstKeptAt: 0,
        });
        expect(messageFingerprint(stored[summary.firstKeptAt]!)).toBe(summary.firstKept);
      }
    });
  }
});

describe("token counts stored with the transcript", () => {
  let h: RunsHarness;
  afterEach(async () => {
    await h?.close();
  });

  it("are written with each persisted message, taken off on reading, and used instead of tokenizing", async () => {
    h = await new RunsHarness({
      agent: { contextTransform: createContextManager({ contextWindow: 100_000 }) },
      script: [{ text: "an answer with a few words in it" }],
    }).start();
    const thread = h.thread();
    await h.runFinished(await h.mention(thread, "a question", alice));
    const raw = await h.redis.lrange(h.keys(thread).transcript, 0, -1);
    const answer = JSON.parse(raw.at(-1)!) as { role: string; tlTokens?: number };
    expect(answer.role).toBe("assistant");
    const { tlTokens, ...message } = answer;
    expect(tlTokens).toBe(messageTokens(JSON.parse(JSON.stringify(message)) as AgentMessage));

    const loaded = await h.store.loadTranscript(threadId(thread));
    expect(loaded.at(-1)).toEqual(message);
    expect(loaded.at(-1)).not.toHaveProperty("tlTokens");

    // A count read back is what every default counter uses (a made-up one proves it is not recounted).
    const [entry] = parseTranscript([JSON.stringify({ ...message, tlTokens: 12_345 })]);
    expect(createTokenCounter().message(entry!)).toBe(12_345);
    expect(createTokenCounter({ safetyFactor: 1.05 }).message(entry!)).toBe(Math.ceil(12_345 * 1.05));
    expect(createTokenCounter({ countThinking: true }).message(entry!)).toBe(tlTokens);
  });
});

describe("TranscriptSink positions when it starts later in the transcript", () => {
  const prefix = uniquePrefix("sinkpos");
  const redis = connect();
  afterAll(async () => {
    await deletePrefix(redis, prefix);
    redis.disconnect();
  });

  it("uses transcript positions in call keys, for recovery's records and in approval requests", () => {
    const scripts = new ThreadScripts(redis, prefix);
    const lease = new Lease(scripts, "slack:T1:C1:x", "run#1", 30_000, {
      lost: () => {},
      stopRequested: () => {},
      beat: () => {},
      failed: () => {},
    });
    const assistant: AgentMessage = {
      role: "assistant",
      content: [{ type: "toolCall", id: "c1", name: "t", arguments: {} }],
      api: "scripted",
      provider: "scripted",
      model: "scripted",
      usage: zeroUsage(),
      stopReason: "toolUse",
      timestamp: 0,
    };
    const sink = new TranscriptSink(
      scripts,
      lease,
      60_000,
      [{ role: "user", content: "hi", timestamp: 0 }, assistant],
      5_000,
      4_990,
    );
    expect(sink.callKey("c1")).toBe("5001:c1");
    expect(sink.positionOf(assistant)).toBe(5_001);
    expect(sink.localCalls({ "5001:c1": "done", "17:c0": "old" })).toEqual({ "1:c1": "done" });
  });
});
