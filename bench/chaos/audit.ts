import { existsSync, readFileSync } from "node:fs";
import type { Redis } from "ioredis";
import { threadId } from "../../src/chat/index.js";
import { playgroundThread } from "../../src/playground/index.js";
import { type RunQueue, threadKeys } from "../../src/runs/index.js";
import { TAG } from "./model.js";
import type { ThreadTraffic } from "./traffic.js";

/** The invariant counts of a chaos run; all but `sent`/`accepted`/`refused` must be 0. */
export interface ChaosCounts {
  /** Messages posted to the playground API. */
  sent: number;
  /** Posts answered 2xx ("got it"). */
  accepted: number;
  /** Posts answered with an error or not at all (the user saw it fail; not counted as lost). */
  refused: number;
  /** Accepted messages that are not in their thread's transcript. */
  lost: number;
  /** Messages that are in their transcript more than once. */
  duplicated: number;
  /** User messages found after a message its author sent later (per thread, transcript order). */
  reordered: number;
  /** Tool-call nonces the `record` tool executed more than once. */
  executedTwice: number;
  /** Threads with a held lease or queued / in-flight messages once the run was given time to settle. */
  stuck: number;
}

/** What explains the counts. */
export interface AuditDetails {
  /** Lost messages by their intake state (`state` hash), `absent` when intake never stored them. */
  lostByState: Record<string, number>;
  /** Tool executions in the executions file. */
  executions: number;
  /** Executed nonces no transcript mentions (a run that was not allowed to write executed a tool). */
  executedUnrecorded: number;
  /** Tool calls in transcripts. */
  toolCalls: number;
  /** Assistant messages that ended in an error (what the user was shown as a failure). */
  errorAnswers: number;
  /** Threads whose transcript does not end with a finished answer. */
  unanswered: number;
  /** A few examples per count, for the report. */
  examples: Record<"lost" | "duplicated" | "reordered" | "executedTwice" | "stuck", string[]>;
}

interface StoredMessage {
  role?: string;
  stopReason?: string;
  content?: unknown;
}

const EXAMPLES = 5;

function textOf(message: StoredMessage): string {
  if (typeof message.content === "string") return message.content;
  if (!Array.isArray(message.content)) return "";
  return message.content
    .map((part: { text?: unknown }) => (typeof part.text === "string" ? part.text : ""))
    .join("");
}

function nonces(message: StoredMessage): string[] {
  if (!Array.isArray(message.content)) return [];
  return message.content
    .filter((part: { type?: string }) => part.type === "toolCall")
    .map((part: { arguments?: { nonce?: unknown } }) => String(part.arguments?.nonce ?? ""));
}

function keysOf(prefix: string, thread: ThreadTraffic) {
  return threadKeys(prefix, threadId(playgroundThread(thread.playgroundId!)));
}

/** True once no thread holds a lease or has queued / in-flight messages and the run queue is empty. */
export async function isQuiet(
  redis: Redis,
  prefix: string,
  threads: ThreadTraffic[],
  queue: RunQueue,
): Promise<boolean> {
  const counts = await queue.getJobCounts("waiting", "active", "delayed", "prioritized", "waiting-children");
  if (Object.values(counts).some((count) => count > 0)) return false;
  return (await stuckThreads(redis, prefix, threads)).length === 0;
}

async function stuckThreads(
  redis: Redis,
  prefix: string,
  threads: ThreadTraffic[],
  queue?: RunQueue,
): Promise<string[]> {
  const started = threads.filter((thread) => thread.playgroundId !== undefined);
  const pipeline = redis.pipeline();
  for (const thread of started) {
    const keys = keysOf(prefix, thread);
    pipeline.exists(keys.lease).llen(keys.inbox).llen(keys.inflight);
  }
  const replies = (await pipeline.exec()) ?? [];
  const stuck: string[] = [];
  for (const [i, thread] of started.entries()) {
    const [lease, inbox, inflight] = [0, 1, 2].map((j) => Number(replies[i * 3 + j]?.[1] ?? 0));
    if (lease! === 0 && inbox! === 0 && inflight! === 0) continue;
    let line = `c${thread.index} (lease ${lease ? "held" : "free"}, inbox ${inbox}, in flight ${inflight}`;
    if (queue) line += `, ${await lastRun(redis, prefix, thread, queue)}`;
    stuck.push(`${line})`);
  }
  return stuck;
}

/** The thread's last run (the lease's value, else meta `run`) and the state of its BullMQ job. */
async function lastRun(
  redis: Redis,
  prefix: string,
  thread: ThreadTraffic,
  queue: RunQueue,
): Promise<string> {
  const keys = keysOf(prefix, thread);
  const [run, lease] = await Promise.all([redis.hget(keys.meta, "run"), redis.get(keys.lease)]);
  const id = lease ?? run ?? "";
  if (id === "") return "no run recorded";
  const job = await queue.getJob(id);
  const state = job ? await job.getState() : "no job";
  const reason = job?.failedReason ? `: ${job.failedReason}` : "";
  return `run ${id.slice(0, 8)} job ${state}${reason}, attempts ${job?.attemptsMade ?? 0}`;
}

/**
 * Reads every thread's transcript and intake state straight from Redis (read-only) and the tool's
 * executions file, and counts what the invariants forbid. `executionsFile` lines: `<nonce> <thread> <pid>`.
 */
export async function audit(
  redis: Redis,
  prefix: string,
  threads: ThreadTraffic[],
  executionsFile: string,
  queue?: RunQueue,
): Promise<{ counts: ChaosCounts; details: AuditDetails }> {
  const all = threads.flatMap((thread) => thread.messages);
  const counts: ChaosCounts = {
    sent: all.length,
    accepted: all.filter((message) => message.accepted).length,
    refused: all.filter((message) => !message.accepted).length,
    lost: 0,
    duplicated: 0,
    reordered: 0,
    executedTwice: 0,
    stuck: 0,
  };
  const examples: AuditDetails["examples"] = {
    lost: [],
    duplicated: [],
    reordered: [],
    executedTwice: [],
    stuck: [],
  };
  const note = (kind: keyof typeof examples, text: string) => {
    if (examples[kind].length < EXAMPLES) examples[kind].push(text);
  };
  const details: AuditDetails = {
    lostByState: {},
    executions: 0,
    executedUnrecorded: 0,
    toolCalls: 0,
    errorAnswers: 0,
    unanswered: 0,
    examples,
  };
  const recorded = new Set<string>();
  for (const thread of threads) {
    if (thread.playgroundId === undefined) continue;
    const keys = keysOf(prefix, thread);
    const raw = await redis.lrange(keys.transcript, 0, -1);
    const seen = new Map<string, number>();
    let highest = -1;
    let last: StoredMessage | undefined;
    for (const entry of raw) {
      let message: StoredMessage;
      try {
        message = JSON.parse(entry) as StoredMessage;
      } catch {
        continue;
      }
      last = message;
      if (message.role === "assistant") {
        for (const nonce of nonces(message)) recorded.add(nonce);
        details.toolCalls += nonces(message).length;
        if (message.stopReason === "error") details.errorAnswers++;
        continue;
      }
      if (message.role !== "user") continue;
      const match = TAG.exec(textOf(message));
      if (!match) continue;
      const tag = match[0];
      const times = (seen.get(tag) ?? 0) + 1;
      seen.set(tag, times);
      if (times > 1) continue;
      const seq = Number(match[2]);
      if (Number(match[1]) === thread.index && seq < highest) {
        counts.reordered++;
        note("reordered", `${tag} after [c${thread.index}.${highest}]`);
      }
      highest = Math.max(highest, seq);
    }
    if (last && !(last.role === "assistant" && last.stopReason === "stop")) details.unanswered++;
    for (const [tag, times] of seen)
      if (times > 1) {
        counts.duplicated++;
        note("duplicated", `${tag} ×${times}`);
      }
    for (const message of thread.messages) {
      if (!message.accepted || seen.has(message.tag)) continue;
      counts.lost++;
      const state = (await redis.hget(keys.state, message.id!)) ?? "absent";
      details.lostByState[state] = (details.lostByState[state] ?? 0) + 1;
      note("lost", `${message.tag} ${message.id} (state ${state})`);
    }
  }
  const stuck = await stuckThreads(redis, prefix, threads, queue);
  counts.stuck = stuck.length;
  for (const line of stuck) note("stuck", line);
  const executed = new Map<string, number>();
  const lines = existsSync(executionsFile) ? readFileSync(executionsFile, "utf8").split("\n") : [];
  for (const line of lines) {
    const [nonce] = line.split(" ");
    if (!nonce) continue;
    details.executions++;
    executed.set(nonce, (executed.get(nonce) ?? 0) + 1);
  }
  for (const [nonce, times] of executed) {
    if (times > 1) {
      counts.executedTwice++;
      note("executedTwice", `${nonce} ×${times}`);
    }
    if (!recorded.has(nonce)) details.executedUnrecorded++;
  }
  return { counts, details };
}
