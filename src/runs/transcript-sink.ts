import type { AgentMessage, AssistantMessage } from "../agent/index.js";
import { asContextSummary, isContextSummary, messageTokens } from "../llm/index.js";
import type { Lease } from "./lease.js";
import { type CallRecord, callKey } from "./recovery.js";
import type { DrainedEntry, ThreadScripts } from "./thread-scripts.js";
import { STORED_TOKENS_FIELD } from "./thread-store.js";

/** Which queue a drained message came from. */
export type DrainKind = "prompt" | "steer" | "followUp" | "interrupt";

/** A drained message that entered the transcript. */
export interface Delivered {
  id: string;
  kind: DrainKind;
  receivedAt: number;
}

/**
 * The run's persisted transcript: an in-memory copy that always matches Redis (call keys and approval
 * requests use transcript positions) and the fenced writes that keep it so — a drained message enters it
 * with its ack, everything else with an append, tool calls get their "executing" and "done" records. A
 * write that answers "lost" loses the lease; nothing after it is written.
 *
 * The copy may start at transcript position `base` (a run loads only what its context can use, see
 * `loadRunTranscript`): positions in call keys are the transcript's, and context summaries are kept with
 * `covered` counted from `bodyBase` (what the context manager sees) but stored counted from the start.
 */
export class TranscriptSink {
  readonly messages: AgentMessage[] = [];
  /** Index of the assistant message whose tool calls run now (the latest one). */
  private assistantIndex = -1;
  private readonly drained = new Map<AgentMessage, { id: string; kind: DrainKind; receivedAt: number }>();
  /** Writes issued without waiting (tool result records); the next awaited write waits for them too. */
  private readonly unsettled: Promise<unknown>[] = [];
  /** "done" records of finished calls not written yet: the next result append carries them (see finishCall). */
  private readonly finished: { callKey: string; record: string }[] = [];
  private flushScheduled = false;

  constructor(
    private readonly scripts: ThreadScripts,
    private readonly lease: Lease,
    private readonly retentionMs: number,
    loaded: AgentMessage[],
    /** Transcript position of `loaded[0]`. */
    readonly base = 0,
    /** Non-summary messages before `base`. */
    private readonly bodyBase = 0,
  ) {
    this.messages.push(...loaded);
    for (let i = loaded.length - 1; i >= 0; i--) {
      if ((loaded[i] as { role?: string }).role === "assistant") {
        this.assistantIndex = i;
        break;
      }
    }
  }

  private get threadId(): string {
    return this.lease.threadId;
  }

  /** The run-unique key of a call of the latest assistant message. */
  callKey(toolCallId: string): string {
    return callKey(this.base + this.assistantIndex, toolCallId);
  }

  /** The transcript position of `message` (its last occurrence), or -1. */
  positionOf(message: AgentMessage): number {
    const index = this.messages.lastIndexOf(message);
    return index < 0 ? index : this.base + index;
  }

  /** Call records keyed by transcript position, re-keyed by position in {@link messages}. */
  localCalls(calls: Readonly<Record<string, string>>): Record<string, string> {
    if (this.base === 0) return { ...calls };
    const local: Record<string, string> = {};
    for (const [key, record] of Object.entries(calls)) {
      const colon = key.indexOf(":");
      const position = Number(key.slice(0, colon));
      if (colon > 0 && position >= this.base) local[`${position - this.base}${key.slice(colon)}`] = record;
    }
    return local;
  }

  /** Remembers drained messages until they enter the transcript. */
  take(kind: DrainKind, entries: readonly DrainedEntry[]): AgentMessage[] {
    const messages: AgentMessage[] = [];
    for (const entry of entries) {
      const message = JSON.parse(entry.body) as AgentMessage;
      this.drained.set(message, { id: entry.id, kind, receivedAt: entry.receivedAt });
      messages.push(message);
    }
    return messages;
  }

  /** Forgets drained messages that will not be delivered by this claim (they go back to the inbox). */
  forget(messages: readonly AgentMessage[]): void {
    for (const message of messages) this.drained.delete(message);
  }

  /**
   * Persists a finished message: the ack of a drained one (returned) or an append. Resolves `undefined`
   * for appends and when the lease is lost. @throws on Redis errors.
   */
  async persist(message: AgentMessage): Promise<Delivered | undefined> {
    if (this.lease.lost) return undefined;
    this.messages.push(message);
    if ((message as { role?: string }).role === "assistant") this.assistantIndex = this.messages.length - 1;
    const drained = this.drained.get(message);
    if (drained) {
      this.drained.delete(message);
      this.flushFinished(); // records go first, in the order the calls finished
      const acked = await this.settled(
        this.scripts.ack(this.threadId, {
          token: this.lease.token,
          msgId: drained.id,
          retention: this.retentionMs,
        }),
      );
      if (acked.kind === "lost") {
        this.lease.lose();
        return undefined;
      }
      return drained;
    }
    // Stored with its token count: a later run (in any worker) need not tokenize it again.
    const stored = JSON.stringify({ ...message, [STORED_TOKENS_FIELD]: messageTokens(message) });
    const input = { token: this.lease.token, retention: this.retentionMs };
    const records = this.finished.splice(0);
    const appended = await this.settled(
      records.length > 0
        ? this.scripts.finishCalls(this.threadId, input, records, [stored])
        : this.scripts.append(this.threadId, input, [stored]),
    );
    if (appended.kind === "lost") this.lease.lose();
    return undefined;
  }

  /** Persists an app-defined message (a context summary). False when this run no longer owns the thread. */
  async appendCustom(message: AgentMessage): Promise<boolean> {
    if (this.lease.lost) return false;
    this.flushFinished();
    const appended = await this.settled(
      this.scripts.append(this.threadId, { token: this.lease.token, retention: this.retentionMs }, [
        JSON.stringify(this.stored(message)),
      ]),
    );
    if (appended.kind === "lost") {
      this.lease.lose();
      return false;
    }
    this.messages.push(message);
    return true;
  }

  /**
   * A context summary as stored: `covered` from the transcript's start, and the position of the first
   * message it does not cover (so a later run can load from there). Other messages as they are.
   */
  private stored(message: AgentMessage): unknown {
    const summary = asContextSummary(message);
    if (!summary) return message;
    let body = 0;
    let firstKeptAt: number | undefined;
    for (let i = 0; i < this.messages.length; i++) {
      if (isContextSummary(this.messages[i])) continue;
      if (body++ === summary.covered) {
        firstKeptAt = this.base + i;
        break;
      }
    }
    return {
      ...summary,
      covered: summary.covered + this.bodyBase,
      ...(firstKeptAt === undefined ? {} : { firstKeptAt }),
    };
  }

  /**
   * Records, right before `execute`, that a call starts. Resolves false — and the tool must not start —
   * when the lease is lost or an earlier claim of this run already started the same call.
   * @throws on Redis errors (the tool then does not start either).
   */
  async beginCall(toolCallId: string, tool: string): Promise<boolean> {
    if (this.lease.lost) return false;
    this.flushFinished();
    const record: CallRecord = { status: "executing", tool, startedAt: Date.now() };
    const reply = await this.settled(
      this.scripts.recordCall(this.threadId, {
        token: this.lease.token,
        callKey: this.callKey(toolCallId),
        record: JSON.stringify(record),
        onlyIfAbsent: 1,
        retention: this.retentionMs,
      }),
    );
    if (reply.kind === "lost") this.lease.lose();
    return reply.kind === "ok";
  }

  /**
   * Records a finished call's result for crash recovery. Not awaited, and not written on its own when the
   * call's result message follows before the event loop turns (a sequential batch, the last call of a
   * parallel one): the next transcript append carries it, in the same script, so a finished tool costs one
   * script call and a result that entered the transcript always has its record. Otherwise (a parallel
   * call that ends while others still run) it is written by itself right after this turn of the event loop,
   * so a worker that dies while the rest of the batch runs keeps the result.
   */
  finishCall(toolCallId: string, result: unknown, isError: boolean): void {
    if (this.lease.lost) return;
    const record = JSON.stringify({ status: "done", result, isError });
    this.finished.push({ callKey: this.callKey(toolCallId), record });
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      this.flushFinished();
    });
  }

  /** Writes the "done" records no append carried (see {@link finishCall}); the next awaited write waits. */
  private flushFinished(): void {
    const records = this.finished.splice(0);
    if (records.length === 0 || this.lease.lost) return;
    const recorded = this.scripts
      .finishCalls(this.threadId, { token: this.lease.token, retention: this.retentionMs }, records, [])
      .then((reply) => {
        if (reply.kind === "lost") this.lease.lose();
      });
    recorded.catch(() => {}); // reported by the step that waits for it
    this.unsettled.push(recorded);
  }

  /** Waits for `step` and for every write issued before it without waiting (a failure of either rejects). */
  async settled<T>(step: Promise<T>): Promise<T> {
    const earlier = this.unsettled.splice(0);
    const [result] = await Promise.all([step, ...earlier]);
    return result;
  }

  /** The latest assistant message, if any. */
  lastAssistant(): AssistantMessage | undefined {
    const message = this.messages[this.assistantIndex];
    return message as AssistantMessage | undefined;
  }
}
