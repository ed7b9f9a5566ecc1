import { afterEach, describe, expect, it } from "vitest";
import type { AssistantMessage } from "../../src/agent/index.js";
import { type ChatUser, type IncomingMessage, type ThreadRef, threadId } from "../../src/chat/index.js";
import type { Disposition } from "../../src/runs/index.js";
import { seededRandom } from "../support/random.js";
import { alice, bob, carol, instantTool, RunsHarness } from "./harness.js";

/**
 * Invariants 1 and 4 under load: messages arrive at random instants around run starts and ends, with
 * disposition flips and platform retries, on two workers. Reproduce a failure with RACE_SEED=<seed>.
 */

const THREADS = 4;
const MESSAGES_PER_THREAD = 520;
const SEED = Number(process.env.RACE_SEED ?? Math.floor(Math.random() * 2 ** 31));

type FinalDisposition = "prompt" | Disposition;

/** One accepted message as the test saw it. */
interface Sent {
  message: IncomingMessage;
  /** Logical time the first submit was issued. */
  issued: number;
  /** The run it started, or the run it was queued for. */
  runId: string;
  /** Dispositions in the order they took effect, each with the logical time it was known to hold from. */
  dispositions: { disposition: FinalDisposition; since: number }[];
}

let h: RunsHarness;
afterEach(async () => {
  await h?.close();
});

describe("randomized race: messages at random instants around run starts and ends", () => {
  it("delivers every accepted message exactly once, in order per disposition, and leaves nothing behind", async () => {
    console.log(`race seed ${SEED} (reproduce with RACE_SEED=${SEED})`);
    const ping = instantTool("ping");
    h = await new RunsHarness({
      tools: [ping.tool],
      workers: 2,
      concurrency: 4,
      separateConnections: true,
      config: { queueCap: 1_000_000, budgets: { maxTurns: 1_000_000, maxWallMs: 15 * 60 * 1000 } },
    }).start();
    const modelRng = seededRandom(SEED ^ 0x5eed);
    let callSeq = 0;
    h.model.recordRequests = false;
    // Resolvers of drivers waiting for a thread's run to give a final answer (its run is about to end).
    const answerWaiters = new Map<string, (() => void)[]>();
    h.model.fallback = (request) => {
      const last = request.messages.at(-1);
      if (last?.role !== "toolResult" && modelRng() < 0.15) {
        callSeq++;
        return { toolCalls: [{ id: `call-${callSeq}`, name: "ping", arguments: { value: `${callSeq}` } }] };
      }
      const first = request.messages.find((m) => m.role === "user");
      const text = JSON.stringify(first?.content ?? "");
      const name = /(race-\d+) #/.exec(text)?.[1];
      if (name !== undefined) {
        for (const resolve of answerWaiters.get(name) ?? []) resolve();
        answerWaiters.delete(name);
      }
      return { text: modelRng() < 0.5 ? "ok" : ["o", "k"] };
    };
    const nextAnswer = (thread: ThreadRef): Promise<void> =>
      new Promise((resolve) => {
        const name = thread.thread.slice(thread.thread.lastIndexOf("race-"));
        answerWaiters.set(name, [...(answerWaiters.get(name) ?? []), resolve]);
      });

    let clock = 0;
    const tick = () => ++clock;
    const sent = new Map<string, Sent[]>();
    const background: Promise<void>[] = [];
    const authors: ChatUser[] = [alice, bob, carol];
    const threads = Array.from({ length: THREADS }, (_, i) => h.thread(`race-${i}`));

    async function flip(record: Sent, thread: ThreadRef, disposition: Disposition): Promise<void> {
      const changed = await h.intake.setDisposition(thread, record.message.id, disposition);
      const at = tick();
      const current = record.dispositions.at(-1)!.disposition;
      if (current === "prompt")
        expect(changed, `seed ${SEED}: a run's prompt changed disposition`).toBe(false);
      if (changed) record.dispositions.push({ disposition, since: at });
    }

    async function drive(thread: ThreadRef, rng: () => number): Promise<void> {
      const list: Sent[] = [];
      sent.set(thread.thread, list);
      let created = 0;
      const fresh = (): IncomingMessage => {
        created++;
        const author = authors[Math.floor(rng() * authors.length)]!;
        return h.message(thread, `${thread.thread} #${created}`, { mentionsBot: true, author });
      };
      const submitNew = async (message: IncomingMessage): Promise<void> => {
        const issued = tick();
        const result = await h.intake.submit(message);
        const at = tick();
        if (result.kind === "started") {
          list.push({
            message,
            issued,
            runId: result.runId,
            dispositions: [{ disposition: "prompt", since: at }],
          });
        } else if (result.kind === "queued") {
          const dispositions = [{ disposition: result.disposition, since: at }];
          list.push({ message, issued, runId: result.runId, dispositions });
        } else {
          expect.fail(`seed ${SEED}: a new message was ${result.kind}`);
        }
      };
      while (created < MESSAGES_PER_THREAD) {
        const action = rng();
        if (action < 0.25) {
          const burst = Array.from({ length: 2 + Math.floor(rng() * 4) }, fresh);
          await Promise.all(burst.map(submitNew));
        } else if (action < 0.3 && list.length > 0) {
          // A platform retry of something already accepted.
          const again = list[Math.floor(rng() * list.length)]!.message;
          expect(await h.intake.submit({ ...again, text: `${again.text} (retry)` })).toEqual({
            kind: "duplicate",
          });
        } else if (action < 0.6) {
          // Around a run's end: the model just gave a final answer, so the run is about to check its queues
          // and release the thread. Messages land at random event-loop turns across that window.
          await Promise.race([nextAnswer(thread), pause(5)]);
          const staggered = Array.from({ length: 1 + Math.floor(rng() * 4) }, () => ({
            message: fresh(),
            turns: Math.floor(rng() * 40),
          }));
          await Promise.all(
            staggered.map(async ({ message, turns }) => {
              for (let i = 0; i < turns; i++) await new Promise((resolve) => setImmediate(resolve));
              await submitNew(message);
            }),
          );
        } else if (action < 0.64) {
          // The same event delivered twice at once (gateway reconnect replay): exactly one is accepted.
          const message = fresh();
          const issued = tick();
          const results = await Promise.all([h.intake.submit(message), h.intake.submit({ ...message })]);
          const at = tick();
          const accepted = results.filter((r) => r.kind !== "duplicate");
          expect(accepted, `seed ${SEED}: replayed pair`).toHaveLength(1);
          const first = accepted[0]!;
          if (first.kind !== "started" && first.kind !== "queued") {
            expect.fail(`seed ${SEED}: a new message was ${first.kind}`);
          }
          const disposition = first.kind === "started" ? "prompt" : first.disposition;
          list.push({ message, issued, runId: first.runId, dispositions: [{ disposition, since: at }] });
        } else {
          await submitNew(fresh());
        }
        // Flip a few recent messages while they may still be queued (fire and forget, at random later instants).
        if (rng() < 0.5 && list.length > 0) {
          const target = list[Math.max(0, list.length - 1 - Math.floor(rng() * 8))]!;
          const disposition: Disposition = rng() < 0.5 ? "followUp" : "steer";
          const delay = Math.floor(rng() * 3);
          background.push(pause(delay).then(() => flip(target, thread, disposition)));
        }
        await randomPause(rng, thread);
      }
    }

    async function randomPause(rng: () => number, thread: ThreadRef): Promise<void> {
      const r = rng();
      if (r < 0.2) return;
      if (r < 0.35) return void (await null);
      if (r < 0.55) return new Promise((resolve) => setImmediate(resolve));
      if (r < 0.8) return pause(Math.floor(rng() * 4));
      // Right after a run's end: wait until the thread goes idle, then submit at once.
      for (let i = 0; i < 200 && (await h.isActive(thread)); i++) {
        await new Promise((resolve) => setImmediate(resolve));
      }
    }

    await Promise.all(threads.map((thread, i) => drive(thread, seededRandom(SEED + i * 7919))));
    await Promise.all(background);
    await h.quiescent(threads);

    expect(await h.queue.getJobCounts("failed")).toEqual({ failed: 0 });
    let total = 0;
    for (const thread of threads) {
      const list = sent.get(thread.thread)!;
      total += list.length;
      const keys = h.keys(thread);
      expect(await h.redis.llen(keys.inbox), `seed ${SEED}: inbox leftovers`).toBe(0);
      expect(await h.redis.llen(keys.inflight), `seed ${SEED}: in-flight leftovers`).toBe(0);
      expect(await h.isActive(thread)).toBe(false);
      expect((await h.store.meta(threadId(thread))).run).toBe("");

      const transcript = await h.transcript(thread);
      const position = new Map<string, number>();
      transcript.forEach((entry, index) => {
        const chatId = (entry as { chatMessageId?: string }).chatMessageId;
        if (chatId === undefined) return;
        expect(position.has(chatId), `seed ${SEED}: ${chatId} twice in the transcript`).toBe(false);
        position.set(chatId, index);
      });
      expect([...position.keys()].sort()).toEqual(list.map((s) => s.message.id).sort());
      const states = await h.redis.hgetall(keys.state);
      for (const record of list) expect(states[record.message.id]).toBe("delivered");
      // Every run answered: the model never failed, was never aborted, and had the last word.
      const last = transcript.at(-1) as AssistantMessage;
      expect(last.role).toBe("assistant");
      for (const entry of transcript) {
        const reason = (entry as Partial<AssistantMessage>).stopReason;
        if (reason !== undefined) expect(["stop", "toolUse"]).toContain(reason);
      }

      const violations: string[] = [];
      // A message queued for a run is delivered by that run: the transcript is a sequence of runs, each
      // opening with the message that started it, and the message sits in the segment of its run.
      const starts = list
        .filter((s) => s.dispositions[0]!.disposition === "prompt")
        .map((s) => ({ at: position.get(s.message.id)!, runId: s.runId }))
        .sort((x, y) => x.at - y.at);
      for (const record of list) {
        const at = position.get(record.message.id)!;
        const segment = starts.filter((start) => start.at <= at).at(-1);
        if (segment?.runId !== record.runId) {
          violations.push(
            `${record.message.id} (for run ${record.runId}) delivered in run ${segment?.runId}`,
          );
        }
      }
      for (const a of list) {
        const finalA = a.dispositions.at(-1)!;
        const queuedA = a.dispositions[0]!.disposition !== "prompt";
        for (const b of list) {
          if (a === b || a.issued >= b.issued) continue;
          const finalB = b.dispositions.at(-1)!;
          const before = position.get(a.message.id)! < position.get(b.message.id)!;
          // Order per disposition: if a was submitted before b and already had its final disposition D when
          // b was submitted, and b was delivered as D too, a is delivered before b.
          if (finalA.disposition === finalB.disposition && finalA.since < b.issued && !before) {
            violations.push(`${a.message.id} after ${b.message.id} (both ${finalA.disposition})`);
          }
          // A message queued for a run is delivered by that run: before any run that started later.
          if (queuedA && finalB.disposition === "prompt" && a.dispositions[0]!.since < b.issued && !before) {
            violations.push(`${a.message.id} (queued) after ${b.message.id}, which started a later run`);
          }
        }
      }
      expect(violations, `seed ${SEED}`).toEqual([]);
    }
    expect(total).toBeGreaterThanOrEqual(2000);
    const all = [...sent.values()].flat();
    const count = (d: FinalDisposition) => all.filter((s) => s.dispositions.at(-1)!.disposition === d).length;
    const flipped = all.filter((s) => s.dispositions.length > 1).length;
    // The schedule really exercised run starts and ends, follow-ups and flips (not one long run).
    expect(count("prompt")).toBeGreaterThanOrEqual(4 * THREADS);
    expect(count("followUp")).toBeGreaterThan(0);
    expect(flipped).toBeGreaterThan(0);
    console.log(
      `race seed ${SEED}: ${total} messages (${count("prompt")} started runs, ${count("steer")} steer, ${count("followUp")} follow-up, ${flipped} flipped), ${callSeq} tool calls`,
    );
  }, 50_000);
});

function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
