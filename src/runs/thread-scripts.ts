import { type ThreadKeys, threadKeys } from "./keys.js";
import type { RedisClient } from "./redis-client.js";
import * as lua from "./scripts.js";
import { SCRIPTS, type ScriptSpec, THREAD_KEY_NAMES } from "./scripts.js";

/**
 * The typed client of the thread scripts: one method per script, a named input, a tagged reply. Fenced
 * methods take the claim's token and answer `{ kind: "lost" }` when the lease is no longer theirs — one
 * reply shape for every fenced script. Every method may reject on Redis errors (the caller decides whether
 * that is transient).
 */

type Reply = string | number | null | Reply[];
type Value = string | number;
type Input<S> = S extends ScriptSpec<infer Args> ? { [K in Args[number]]: Value } : never;

/** The fenced-script answer when this claim no longer holds the lease. */
export type Lost = { kind: "lost" };

/** The most urgent queued message a running loop yields to, and its author's name ("" when unknown). */
export interface Waiting {
  kind: "interrupt" | "steer" | undefined;
  by: string;
}

function waitingOf(kind: Reply | undefined, by: Reply | undefined): Waiting {
  const k = String(kind ?? "");
  return { kind: k === "interrupt" || k === "steer" ? k : undefined, by: String(by ?? "") };
}

/** A queued message a worker drained: its id, transcript body (JSON) and when it arrived (ms, 0 unknown). */
export interface DrainedEntry {
  id: string;
  body: string;
  receivedAt: number;
}

export type SubmitReply =
  | { kind: "duplicate"; runWithoutJob: string | undefined }
  | { kind: "ignored" }
  /** `waitingApprovals`: tools whose approval cards still wait for a decision in this thread (sorted). */
  | { kind: "queued"; runId: string; disposition: string; waitingApprovals: string[] }
  | { kind: "refused"; runId: string }
  | { kind: "stopping"; runId: string }
  | { kind: "stopRefused"; runId: string }
  | { kind: "stopIdle" }
  /** A setting command was stored (or, invalid, marked handled); see thread-settings.ts. */
  | { kind: "setting" }
  | { kind: "started"; runId: string };

export type StopReply =
  | { kind: "idle" }
  | { kind: "refused"; runId: string }
  | { kind: "stopping"; runId: string };

export type StartReply =
  | { kind: "stale" }
  | {
      kind: "ok";
      token: string;
      /** JSON of who asked the run to stop, or "" when nobody did. */
      stopBy: string;
      transcript: string[];
      meta: Record<string, string>;
      prompts: DrainedEntry[];
      steering: DrainedEntry[];
      /** Tool-call records of the run so far, by call key. */
      calls: Record<string, string>;
      /** Approval ids of the run so far, by call key. */
      approvals: Record<string, string>;
      /** Queued interrupts the start drained (delivered with the first steering poll, before it). */
      interrupts: DrainedEntry[];
      /** Transcript position of `transcript[0]` (0 unless a `tail` was asked for). */
      transcriptFrom: number;
    };

export type DecideReply =
  | { kind: "accepted"; status: string }
  | { kind: "already"; status: string; decidedBy: string }
  | { kind: "forbidden" }
  | { kind: "expired" }
  | { kind: "unknown" };

const defined = new WeakSet<RedisClient>();

/**
 * Threads whose key list a client keeps (a worker streams a few hundred runs at once): past it, the
 * least recently used thread's list is built again on its next call.
 */
const KEY_CACHE_SIZE = 1024;

function flatToRecord(flat: Reply | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (!Array.isArray(flat)) return out;
  for (let i = 0; i + 1 < flat.length; i += 2) out[String(flat[i])] = String(flat[i + 1]);
  return out;
}

function drainedEntries(flat: Reply | undefined): DrainedEntry[] {
  const out: DrainedEntry[] = [];
  if (!Array.isArray(flat)) return out;
  for (let i = 0; i + 2 < flat.length; i += 3) {
    out.push({ id: String(flat[i]), body: String(flat[i + 1]), receivedAt: Number(flat[i + 2]) || 0 });
  }
  return out;
}

function tag(reply: Reply): [string, ...Reply[]] {
  if (!Array.isArray(reply) || typeof reply[0] !== "string") {
    throw new Error(`unexpected script reply ${JSON.stringify(reply)}`);
  }
  return reply as [string, ...Reply[]];
}

/** Thread scripts bound to one connection and key prefix. */
export class ThreadScripts {
  constructor(
    readonly redis: RedisClient,
    readonly prefix: string,
  ) {
    if (!defined.has(redis)) {
      for (const script of SCRIPTS) {
        redis.defineCommand(script.name, {
          numberOfKeys: THREAD_KEY_NAMES.length + (script.approval ? 1 : 0),
          lua: script.lua,
        });
      }
      defined.add(redis);
    }
  }

  /** Per thread: its keys and the thread keys every script takes, in THREAD_KEY_NAMES order. */
  private readonly keyCache = new Map<string, { keys: ThreadKeys; list: readonly string[] }>();

  /** The keys of a thread. */
  keys(threadId: string): ThreadKeys {
    return this.cached(threadId).keys;
  }

  private cached(threadId: string): { keys: ThreadKeys; list: readonly string[] } {
    let entry = this.keyCache.get(threadId);
    if (entry) {
      // Map order is insertion order: re-inserting keeps the least recently used thread first.
      this.keyCache.delete(threadId);
    } else {
      const keys = threadKeys(this.prefix, threadId);
      entry = { keys, list: THREAD_KEY_NAMES.map((name) => keys[name]) };
      if (this.keyCache.size >= KEY_CACHE_SIZE) {
        this.keyCache.delete(this.keyCache.keys().next().value as string);
      }
    }
    this.keyCache.set(threadId, entry);
    return entry;
  }

  private call<S extends ScriptSpec>(
    script: S,
    threadId: string,
    input: Input<S>,
    options: { approvalId?: string; rest?: readonly string[] } = {},
  ): Promise<Reply> {
    const { keys, list } = this.cached(threadId);
    const values = input as Record<string, Value>;
    const args: Value[] = [...list];
    if (script.approval) args.push(keys.approval(options.approvalId ?? ""));
    for (const name of script.args) args.push(values[name] ?? "");
    if (options.rest) for (const value of options.rest) args.push(value);
    const command = (this.redis as unknown as Record<string, (...a: Value[]) => Promise<Reply>>)[
      script.name
    ]!;
    return command.apply(this.redis, args);
  }

  async submit(threadId: string, input: Input<typeof lua.SUBMIT>): Promise<SubmitReply> {
    const [kind, a = "", b = "", c] = tag(await this.call(lua.SUBMIT, threadId, input));
    switch (kind) {
      case "duplicate":
        return { kind, runWithoutJob: a === "" ? undefined : String(a) };
      case "queued":
        return {
          kind,
          runId: String(a),
          disposition: String(b),
          waitingApprovals: Array.isArray(c) ? c.map(String) : [],
        };
      case "refused":
      case "stopping":
      case "stopRefused":
      case "started":
        return { kind, runId: String(a) };
      case "stopIdle":
      case "setting":
        return { kind };
      default:
        return { kind: "ignored" };
    }
  }

  /** The previous disposition when the change took effect (still queued, not a prompt), else undefined. */
  async setDisposition(
    threadId: string,
    input: Input<typeof lua.SET_DISPOSITION>,
  ): Promise<string | undefined> {
    const reply = await this.call(lua.SET_DISPOSITION, threadId, input);
    return typeof reply === "string" ? reply : undefined;
  }

  async withdraw(threadId: string, input: Input<typeof lua.WITHDRAW>): Promise<boolean> {
    return (await this.call(lua.WITHDRAW, threadId, input)) === 1;
  }

  async edit(threadId: string, input: Input<typeof lua.EDIT>): Promise<boolean> {
    return (await this.call(lua.EDIT, threadId, input)) === 1;
  }

  async stop(threadId: string, input: Input<typeof lua.STOP>): Promise<StopReply> {
    const [kind, run = ""] = tag(await this.call(lua.STOP, threadId, input));
    if (kind === "refused" || kind === "stopping") return { kind, runId: String(run) };
    return { kind: "idle" };
  }

  /** Claims the run; `tail` (default 0: all) limits the transcript to its last entries. */
  async start(
    threadId: string,
    input: Omit<Input<typeof lua.START>, "tail"> & { tail?: number },
  ): Promise<StartReply> {
    const reply = tag(await this.call(lua.START, threadId, { ...input, tail: input.tail ?? 0 }));
    if (reply[0] !== "ok") return { kind: "stale" };
    const [, token, stopBy, transcript, meta, prompts, steering, calls, approvals, interrupts, from] = reply;
    return {
      kind: "ok",
      token: String(token),
      stopBy: String(stopBy ?? ""),
      transcript: Array.isArray(transcript) ? transcript.map(String) : [],
      meta: flatToRecord(meta),
      prompts: drainedEntries(prompts),
      steering: drainedEntries(steering),
      calls: flatToRecord(calls),
      approvals: flatToRecord(approvals),
      interrupts: drainedEntries(interrupts),
      transcriptFrom: Number(from ?? 0),
    };
  }

  async heartbeat(
    threadId: string,
    input: Input<typeof lua.HEARTBEAT>,
  ): Promise<Lost | { kind: "ok"; stopBy: string; waiting: Waiting }> {
    const [kind, stopBy = "", waiting, by] = tag(await this.call(lua.HEARTBEAT, threadId, input));
    return kind === "ok"
      ? { kind, stopBy: String(stopBy), waiting: waitingOf(waiting, by) }
      : { kind: "lost" };
  }

  async drain(
    threadId: string,
    input: Input<typeof lua.DRAIN>,
  ): Promise<Lost | { kind: "ok"; entries: DrainedEntry[]; waiting: Waiting }> {
    const [kind, flat, waiting, by] = tag(await this.call(lua.DRAIN, threadId, input));
    return kind === "ok"
      ? { kind, entries: drainedEntries(flat), waiting: waitingOf(waiting, by) }
      : { kind: "lost" };
  }

  async ack(threadId: string, input: Input<typeof lua.ACK>): Promise<Lost | { kind: "ok" }> {
    const [kind] = tag(await this.call(lua.ACK, threadId, input));
    return kind === "ok" ? { kind } : { kind: "lost" };
  }

  async append(
    threadId: string,
    input: Input<typeof lua.APPEND>,
    messages: readonly string[],
  ): Promise<Lost | { kind: "ok"; length: number }> {
    const [kind, length] = tag(await this.call(lua.APPEND, threadId, input, { rest: messages }));
    return kind === "ok" ? { kind, length: Number(length) } : { kind: "lost" };
  }

  /**
   * Writes finished calls' "done" records (callKey → JSON) and appends `messages` (JSON each, their results)
   * in one atomic step. `length` is the transcript's length after it.
   */
  async finishCalls(
    threadId: string,
    input: Omit<Input<typeof lua.FINISH_CALLS>, "records">,
    records: readonly { callKey: string; record: string }[],
    messages: readonly string[],
  ): Promise<Lost | { kind: "ok"; length: number }> {
    const rest = records.flatMap(({ callKey, record }) => [callKey, record]);
    rest.push(...messages);
    const [kind, length] = tag(
      await this.call(lua.FINISH_CALLS, threadId, { ...input, records: records.length }, { rest }),
    );
    return kind === "ok" ? { kind, length: Number(length) } : { kind: "lost" };
  }

  async recordCall(
    threadId: string,
    input: Input<typeof lua.RECORD_CALL>,
  ): Promise<Lost | { kind: "ok" } | { kind: "exists"; record: string }> {
    const [kind, record] = tag(await this.call(lua.RECORD_CALL, threadId, input));
    if (kind === "ok") return { kind };
    if (kind === "exists") return { kind, record: String(record) };
    return { kind: "lost" };
  }

  async release(
    threadId: string,
    input: Input<typeof lua.RELEASE>,
  ): Promise<
    Lost | { kind: "pending" } | { kind: "released"; notProcessed: { id: string; disposition: string }[] }
  > {
    const [kind, ...flat] = tag(await this.call(lua.RELEASE, threadId, input));
    if (kind === "released") {
      const notProcessed: { id: string; disposition: string }[] = [];
      for (let i = 0; i + 1 < flat.length; i += 2) {
        notProcessed.push({ id: String(flat[i]), disposition: String(flat[i + 1]) });
      }
      return { kind, notProcessed };
    }
    if (kind === "pending") return { kind };
    return { kind: "lost" };
  }

  async createApproval(
    threadId: string,
    input: Input<typeof lua.CREATE_APPROVAL>,
    fields: Record<string, Value>,
  ): Promise<Lost | { kind: "created" } | { kind: "exists"; status: string }> {
    const rest = Object.entries(fields).flatMap(([name, value]) => [name, String(value)]);
    const [kind, status = ""] = tag(
      await this.call(lua.CREATE_APPROVAL, threadId, input, { approvalId: String(input.approvalId), rest }),
    );
    if (kind === "created") return { kind };
    if (kind === "exists") return { kind, status: String(status) };
    return { kind: "lost" };
  }

  async decide(threadId: string, input: Input<typeof lua.DECIDE>): Promise<DecideReply> {
    const reply = tag(await this.call(lua.DECIDE, threadId, input, { approvalId: String(input.approvalId) }));
    const [kind, status = "", decidedBy = ""] = reply;
    if (kind === "accepted") return { kind, status: String(status) };
    if (kind === "already") return { kind, status: String(status), decidedBy: String(decidedBy) };
    if (kind === "forbidden" || kind === "expired") return { kind };
    return { kind: "unknown" };
  }

  async settleApproval(
    threadId: string,
    approvalId: string,
    input: Input<typeof lua.SETTLE_APPROVAL>,
  ): Promise<string | undefined> {
    const reply = await this.call(lua.SETTLE_APPROVAL, threadId, input, { approvalId });
    return typeof reply === "string" ? reply : undefined;
  }
}
