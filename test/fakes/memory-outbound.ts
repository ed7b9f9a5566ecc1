import {
  type ApprovalCard,
  approvalCardText,
  CHAT_OUTBOUND_METHODS,
  type ChatDialect,
  type ChatOutbound,
  MARKDOWN_DIALECT,
  type OutboundLimits,
  type PostedMessage,
  type ThreadRef,
  threadId,
} from "../../src/chat/index.js";

/** The {@link ChatOutbound} methods, in declaration order. */
export const OUTBOUND_OPERATIONS = CHAT_OUTBOUND_METHODS;

/** A {@link ChatOutbound} method, as recorded by {@link MemoryOutbound}. */
export type OutboundOperation = (typeof OUTBOUND_OPERATIONS)[number];

/** One outbound call as {@link MemoryOutbound} recorded it. Only the fields the call has are present. */
export interface RecordedOperation {
  op: OutboundOperation;
  /** {@link threadId} of the thread. */
  thread: string;
  /** The message operated on; for `post` / `postApproval`, the id it was given (absent when it failed). */
  messageId?: string;
  text?: string;
  emoji?: string;
  /** For `setStatus`: the status, `null` when cleared. */
  status?: string | null;
  /** For `notify`: the recipient. */
  userId?: string;
  /** For `postApproval` / `updateApproval`: a copy of the card. */
  card?: ApprovalCard;
  /** Present when the call rejected: the error's message. */
  error?: string;
}

/** A message in a {@link MemoryOutbound} thread. */
export interface MemoryMessage {
  id: string;
  /** {@link threadId} of its thread. */
  thread: string;
  /** `text` and `approval` were posted by the bot; `external` ones (users') are known only by reactions. */
  kind: "text" | "approval" | "external";
  /** Current text (for approval cards, {@link approvalCardText} in the outbound's dialect). */
  text: string;
  /** The bot's reactions on it. */
  reactions: Set<string>;
  /** Current card, for approval messages. */
  card?: ApprovalCard;
  deleted: boolean;
  /** Successful edits (or card updates) so far. */
  edits: number;
}

/** Why a {@link MemoryOutbound} call rejected, shaped like the platforms' errors. */
export type MemoryOutboundErrorCode =
  | "injected_failure"
  | "no_text"
  | "msg_too_long"
  | "message_not_found"
  | "cant_update_message";

/** The rejection of a {@link MemoryOutbound} call. */
export class MemoryOutboundError extends Error {
  constructor(
    readonly operation: OutboundOperation,
    readonly code: MemoryOutboundErrorCode,
    readonly thread: string,
    message?: string,
  ) {
    super(message ?? `${operation} failed in ${thread}: ${code}`);
    this.name = "MemoryOutboundError";
  }
}

/** Options of {@link MemoryOutbound}. */
export interface MemoryOutboundOptions {
  /**
   * Limits it reports and enforces (texts longer than `maxMessageChars` are rejected as `msg_too_long`).
   * Default `{ maxMessageChars: 4000, minEditIntervalMs: 0 }`.
   */
  limits?: Partial<OutboundLimits>;
  /** The dialect it claims to speak (the renderer converts with it). Default {@link MARKDOWN_DIALECT}. */
  dialect?: ChatDialect;
  /** Keep every operation in {@link MemoryOutbound.ops}. Default `true`; turn off for long benchmarks. */
  recordOps?: boolean;
  /** Prefix of the message ids it hands out (`m1`, `m2`, …). Default `"m"`. */
  idPrefix?: string;
}

type Waiter = { predicate: (chat: MemoryOutbound) => boolean; resolve: () => void };

const DEFAULT_LIMITS: OutboundLimits = { maxMessageChars: 4000, minEditIntervalMs: 0 };

/**
 * An in-memory chat implementing {@link ChatOutbound}, for tests and benchmarks (a test double: it is not
 * part of `src/`, and the playground has its own outbound).
 *
 * Every call is applied (and recorded in {@link MemoryOutbound.ops}) synchronously when it is made, in
 * call order, unless the outbound is {@link MemoryOutbound.pause paused}; each call costs O(1). Calls
 * reject like a platform would: empty text (`no_text`), text over the limit (`msg_too_long`), unknown or
 * deleted messages (`message_not_found`), editing a message the bot did not post (`cant_update_message`),
 * and failures injected with {@link MemoryOutbound.failNext}. Rejected calls are recorded with `error`.
 * Reacting to an unknown message id records an `external` message (a user's) in that thread.
 */
export class MemoryOutbound implements ChatOutbound {
  readonly limits: OutboundLimits;
  readonly dialect: ChatDialect;
  /** Every call in the order it was applied (empty when `recordOps` is off). */
  readonly ops: RecordedOperation[] = [];
  /** Number of applied calls per operation (also counted when `recordOps` is off). */
  readonly counts = Object.fromEntries(OUTBOUND_OPERATIONS.map((op) => [op, 0])) as Record<
    OutboundOperation,
    number
  >;
  /**
   * The most calls on one message that were ever in flight at once (from call until its promise
   * settles). A caller that serializes per message keeps this at 1.
   */
  maxInFlightPerMessage = 0;

  private readonly recordOps: boolean;
  private readonly idPrefix: string;
  private nextId = 1;
  private readonly byId = new Map<string, MemoryMessage>();
  private readonly byThread = new Map<string, MemoryMessage[]>();
  private readonly statuses = new Map<string, string | null>();
  private readonly failures = new Map<OutboundOperation, { remaining: number; error: unknown }>();
  private readonly inFlight = new Map<string, number>();
  private waiters: Waiter[] = [];
  private readonly listeners = new Set<(op: RecordedOperation) => void>();
  private paused = false;
  private readonly held: (() => void)[] = [];

  constructor(options: MemoryOutboundOptions = {}) {
    this.limits = { ...DEFAULT_LIMITS, ...options.limits };
    this.dialect = options.dialect ?? MARKDOWN_DIALECT;
    this.recordOps = options.recordOps ?? true;
    this.idPrefix = options.idPrefix ?? "m";
  }

  post(thread: ThreadRef, text: string): Promise<PostedMessage> {
    return this.call("post", thread, { text }, undefined, (entry, key) => {
      this.checkText("post", key, text);
      const message = this.create(key, "text", text);
      entry.messageId = message.id;
      return { id: message.id };
    });
  }

  edit(thread: ThreadRef, messageId: string, text: string): Promise<void> {
    return this.call("edit", thread, { messageId, text }, messageId, (_entry, key) => {
      const message = this.ownMessage("edit", key, messageId, "text");
      this.checkText("edit", key, text);
      message.text = text;
      message.edits++;
    });
  }

  delete(thread: ThreadRef, messageId: string): Promise<void> {
    return this.call("delete", thread, { messageId }, messageId, (_entry, key) => {
      const message = this.ownMessage("delete", key, messageId, undefined);
      message.deleted = true;
    });
  }

  react(thread: ThreadRef, messageId: string, emoji: string): Promise<void> {
    return this.call("react", thread, { messageId, emoji }, messageId, (_entry, key) => {
      this.anyMessage("react", key, messageId).reactions.add(emoji);
    });
  }

  unreact(thread: ThreadRef, messageId: string, emoji: string): Promise<void> {
    return this.call("unreact", thread, { messageId, emoji }, messageId, (_entry, key) => {
      this.anyMessage("unreact", key, messageId).reactions.delete(emoji);
    });
  }

  setStatus(thread: ThreadRef, status: string | null): Promise<void> {
    return this.call("setStatus", thread, { status }, undefined, (_entry, key) => {
      this.statuses.set(key, status);
    });
  }

  /** Records the run's end and clears the thread's status. */
  endRun(thread: ThreadRef): Promise<void> {
    return this.call("endRun", thread, {}, undefined, (_entry, key) => {
      this.statuses.set(key, null);
    });
  }

  postApproval(thread: ThreadRef, card: ApprovalCard): Promise<PostedMessage> {
    const copy = structuredClone(card);
    return this.call("postApproval", thread, { card: copy }, undefined, (entry, key) => {
      const message = this.create(key, "approval", approvalCardText(copy, this.dialect));
      message.card = copy;
      entry.messageId = message.id;
      return { id: message.id };
    });
  }

  updateApproval(thread: ThreadRef, messageId: string, card: ApprovalCard): Promise<void> {
    const copy = structuredClone(card);
    return this.call("updateApproval", thread, { messageId, card: copy }, messageId, (_entry, key) => {
      const message = this.ownMessage("updateApproval", key, messageId, "approval");
      message.card = copy;
      message.text = approvalCardText(copy, this.dialect);
      message.edits++;
    });
  }

  notify(thread: ThreadRef, userId: string, text: string): Promise<void> {
    return this.call("notify", thread, { userId, text }, undefined, (_entry, key) => {
      this.checkText("notify", key, text);
    });
  }

  /**
   * Makes the next `count` calls of `operation` reject (recorded with `error`, nothing applied). `error`
   * defaults to a {@link MemoryOutboundError} with code `injected_failure`. Replaces an earlier setting
   * for the same operation.
   */
  failNext(operation: OutboundOperation, count = 1, error?: unknown): void {
    this.failures.set(operation, { remaining: count, error });
  }

  /** From now on, calls wait (unapplied, in order) until {@link MemoryOutbound.release} or `resume`. */
  pause(): void {
    this.paused = true;
  }

  /** Applies every waiting call in order and stops pausing. */
  resume(): void {
    this.paused = false;
    this.release(this.held.length);
  }

  /** Applies up to `count` waiting calls in order (staying paused). Returns how many were applied. */
  release(count = 1): number {
    const batch = this.held.splice(0, count);
    for (const apply of batch) apply();
    return batch.length;
  }

  /** Calls made while paused that are still waiting. */
  get waiting(): number {
    return this.held.length;
  }

  /**
   * Resolves as soon as `predicate(this)` holds: checked now and after every recorded call (never by
   * polling or timers). `predicate` must not throw. Pair it with the test runner's timeout.
   */
  waitFor(predicate: (chat: MemoryOutbound) => boolean): Promise<void> {
    if (predicate(this)) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ predicate, resolve }));
  }

  /** Calls `listener` after every recorded call (also with `recordOps` off). Returns an unsubscribe. */
  subscribe(listener: (op: RecordedOperation) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** All messages of a thread in posting order, deleted ones included. */
  messages(thread: ThreadRef): readonly MemoryMessage[] {
    return this.byThread.get(threadId(thread)) ?? [];
  }

  /** A message by id. */
  message(messageId: string): MemoryMessage | undefined {
    return this.byId.get(messageId);
  }

  /** Texts of the bot's visible (not deleted) text messages in a thread, in order. */
  texts(thread: ThreadRef): string[] {
    return this.messages(thread)
      .filter((message) => message.kind === "text" && !message.deleted)
      .map((message) => message.text);
  }

  /** The current status of a thread (`null` when cleared or never set). */
  status(thread: ThreadRef): string | null {
    return this.statuses.get(threadId(thread)) ?? null;
  }

  /** The recorded calls for one thread. */
  opsFor(thread: ThreadRef): RecordedOperation[] {
    const key = threadId(thread);
    return this.ops.filter((op) => op.thread === key);
  }

  private call<T>(
    op: OutboundOperation,
    thread: ThreadRef,
    fields: Omit<RecordedOperation, "op" | "thread">,
    messageId: string | undefined,
    apply: (entry: RecordedOperation, key: string) => T,
  ): Promise<T> {
    const key = threadId(thread);
    const entry: RecordedOperation = { op, thread: key, ...fields };
    if (messageId !== undefined) this.enter(messageId);
    const settle = (): T => {
      try {
        const failure = this.failures.get(op);
        if (failure !== undefined && failure.remaining > 0) {
          failure.remaining--;
          throw failure.error ?? new MemoryOutboundError(op, "injected_failure", key);
        }
        const result = apply(entry, key);
        this.record(entry);
        return result;
      } catch (err) {
        entry.error = err instanceof Error ? err.message : String(err);
        this.record(entry);
        throw err;
      }
    };
    const promise = this.paused
      ? new Promise<T>((resolve, reject) =>
          this.held.push(() => {
            try {
              resolve(settle());
            } catch (err) {
              reject(err);
            }
          }),
        )
      : new Promise<T>((resolve) => resolve(settle()));
    if (messageId === undefined) return promise;
    return promise.finally(() => this.leave(messageId));
  }

  private record(entry: RecordedOperation): void {
    this.counts[entry.op]++;
    if (this.recordOps) this.ops.push(entry);
    for (const listener of this.listeners) {
      try {
        listener(entry);
      } catch {
        // Listeners must not throw; one that does must not turn a successful call into a failure.
      }
    }
    if (this.waiters.length === 0) return;
    const pending: Waiter[] = [];
    for (const waiter of this.waiters) {
      if (waiter.predicate(this)) waiter.resolve();
      else pending.push(waiter);
    }
    this.waiters = pending;
  }

  private enter(messageId: string): void {
    const count = (this.inFlight.get(messageId) ?? 0) + 1;
    this.inFlight.set(messageId, count);
    if (count > this.maxInFlightPerMessage) this.maxInFlightPerMessage = count;
  }

  private leave(messageId: string): void {
    const count = (this.inFlight.get(messageId) ?? 1) - 1;
    if (count === 0) this.inFlight.delete(messageId);
    else this.inFlight.set(messageId, count);
  }

  private create(key: string, kind: MemoryMessage["kind"], text: string, id?: string): MemoryMessage {
    const message: MemoryMessage = {
      id: id ?? `${this.idPrefix}${this.nextId++}`,
      thread: key,
      kind,
      text,
      reactions: new Set(),
      deleted: false,
      edits: 0,
    };
    this.byId.set(message.id, message);
    let list = this.byThread.get(key);
    if (list === undefined) {
      list = [];
      this.byThread.set(key, list);
    }
    list.push(message);
    return message;
  }

  private checkText(op: OutboundOperation, key: string, text: string): void {
    if (text.trim() === "") throw new MemoryOutboundError(op, "no_text", key);
    if (text.length > this.limits.maxMessageChars) {
      throw new MemoryOutboundError(
        op,
        "msg_too_long",
        key,
        `${op} failed in ${key}: msg_too_long (${text.length} > ${this.limits.maxMessageChars})`,
      );
    }
  }

  private ownMessage(
    op: OutboundOperation,
    key: string,
    messageId: string,
    kind: "text" | "approval" | undefined,
  ): MemoryMessage {
    const message = this.byId.get(messageId);
    if (message === undefined || message.thread !== key || message.deleted) {
      throw new MemoryOutboundError(op, "message_not_found", key);
    }
    if (message.kind === "external" || (kind !== undefined && message.kind !== kind)) {
      throw new MemoryOutboundError(op, "cant_update_message", key);
    }
    return message;
  }

  private anyMessage(op: OutboundOperation, key: string, messageId: string): MemoryMessage {
    const message = this.byId.get(messageId);
    if (message === undefined) return this.create(key, "external", "", messageId);
    if (message.thread !== key || message.deleted)
      throw new MemoryOutboundError(op, "message_not_found", key);
    return message;
  }
}
