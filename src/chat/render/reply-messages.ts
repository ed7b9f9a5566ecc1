import type { ChatOutbound, ReplyPart, ThreadRef } from "../types.js";
import type { RenderClock } from "./clock.js";

/** The outbound operations the renderer performs, as reported to its `onError`. */
export type RenderOperation = "post" | "edit" | "delete" | "setStatus" | "endRun";

/** What {@link ReplyMessages} needs from its owner. */
export interface ReplyMessagesOptions {
  outbound: ChatOutbound;
  thread: ThreadRef;
  clock: RenderClock;
  minEditIntervalMs: number;
  onError: (err: unknown, operation: RenderOperation) => void;
  /** Called after every operation settles (success or failure). Must not throw. */
  onSettled: () => void;
}

interface Slot {
  /** Platform id once the post resolved. */
  id: string | undefined;
  /** The text the message should show; `""` means it should not exist. */
  desired: string;
  /** `desired` in structured form, passed along when present (outbounds that take tool tasks). */
  parts: ReplyPart[] | undefined;
  /** The text the platform is known to show (after a successful post or edit). */
  sent: string | undefined;
  deleted: boolean;
  inFlight: boolean;
  /** When the last operation on this message started (for throttling). */
  lastStartAt: number;
  timer: unknown;
}

/**
 * The bot's reply messages of one run, in thread order. Keeps each message in sync with the text it
 * should show: posts in order (a message is posted only after the previous one's post resolved), then
 * edits. Per message, operations are serialized (never two in flight, never an edit before the post
 * resolved), edits are at least `minEditIntervalMs` apart (measured from the start of the previous
 * operation), intermediate texts are coalesced, and an edit is never sent with the text the message
 * already shows. A failed operation is reported through `onError` and retried on the next
 * {@link ReplyMessages.set} or by {@link ReplyMessages.retryUnsynced}, never in a loop.
 */
export class ReplyMessages {
  private readonly slots: Slot[] = [];
  private idleWaiters: (() => void)[] = [];
  private inFlightCount = 0;

  constructor(private readonly options: ReplyMessagesOptions) {}

  /** Number of messages (posted or planned). */
  get count(): number {
    return this.slots.length;
  }

  /** True while an operation on any message is in flight. */
  get anyInFlight(): boolean {
    return this.inFlightCount > 0;
  }

  /**
   * When the next operation on the last message may start (`minEditIntervalMs` after the previous one
   * started; also for a post that failed), or `-Infinity` when there is no message yet.
   */
  get lastNextAllowedAt(): number {
    const slot = this.slots.at(-1);
    return slot === undefined ? Number.NEGATIVE_INFINITY : slot.lastStartAt + this.options.minEditIntervalMs;
  }

  /**
   * Sets what message `index` should show (`""`: delete it) and starts syncing. Creates messages as needed.
   * `parts` is `text` in structured form (see `ChatOutbound.toolTasks`); messages are compared by `text`.
   */
  set(index: number, text: string, parts?: ReplyPart[]): void {
    while (this.slots.length <= index) {
      this.slots.push({
        id: undefined,
        desired: "",
        parts: undefined,
        sent: undefined,
        deleted: false,
        inFlight: false,
        lastStartAt: Number.NEGATIVE_INFINITY,
        timer: undefined,
      });
    }
    const slot = this.slots[index]!;
    if (slot.deleted && text !== "") Object.assign(slot, { id: undefined, sent: undefined, deleted: false });
    slot.desired = text;
    slot.parts = parts;
    this.pump(index, false);
  }

  /** Resolves once no operation is in flight and no throttled edit is waiting. */
  whenIdle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /**
   * One more attempt, in order and awaited, for every message whose platform text differs from what it
   * should show. Honours the edit throttle; posts a message even if an earlier one could not be posted.
   * Call only when idle (after {@link ReplyMessages.whenIdle}). Never rejects.
   */
  async retryUnsynced(): Promise<void> {
    for (let index = 0; index < this.slots.length; index++) {
      const slot = this.slots[index]!;
      if (this.isSynced(slot)) continue;
      const wait = slot.id === undefined ? 0 : slot.lastStartAt + this.options.minEditIntervalMs - this.now();
      if (wait > 0) await new Promise<void>((resolve) => this.options.clock.setTimeout(resolve, wait));
      await this.start(index);
    }
  }

  /** Cancels throttle timers (pending edits are dropped). */
  dispose(): void {
    for (const slot of this.slots) {
      if (slot.timer !== undefined) this.options.clock.clearTimeout(slot.timer);
      slot.timer = undefined;
    }
    this.notifyIdle();
  }

  private pump(index: number, ignoreOrder: boolean): void {
    const slot = this.slots[index];
    if (slot === undefined || slot.inFlight || slot.timer !== undefined || this.isSynced(slot)) return;
    if (slot.id === undefined) {
      const previous = this.slots[index - 1];
      if (!ignoreOrder && previous !== undefined && previous.id === undefined) return;
      void this.start(index);
      return;
    }
    const wait = slot.lastStartAt + this.options.minEditIntervalMs - this.now();
    if (wait > 0) {
      slot.timer = this.options.clock.setTimeout(() => {
        slot.timer = undefined;
        this.pump(index, false);
        this.notifyIdle();
      }, wait);
      return;
    }
    void this.start(index);
  }

  /** Performs one operation on a message; resolves when it settled. Never rejects. */
  private async start(index: number): Promise<void> {
    const slot = this.slots[index]!;
    const { outbound, thread } = this.options;
    const text = slot.desired;
    const parts = slot.parts;
    const operation: RenderOperation = slot.id === undefined ? "post" : text === "" ? "delete" : "edit";
    slot.inFlight = true;
    this.inFlightCount++;
    slot.lastStartAt = this.now();
    let succeeded = false;
    try {
      if (slot.id === undefined) {
        slot.id = (
          await (parts === undefined ? outbound.post(thread, text) : outbound.post(thread, text, parts))
        ).id;
      } else if (operation === "delete") {
        await outbound.delete(thread, slot.id);
        slot.deleted = true;
      } else {
        await (parts === undefined
          ? outbound.edit(thread, slot.id, text)
          : outbound.edit(thread, slot.id, text, parts));
      }
      slot.sent = text;
      succeeded = true;
    } catch (err) {
      this.options.onError(err, operation);
    }
    slot.inFlight = false;
    this.inFlightCount--;
    if (succeeded) {
      this.pump(index, false);
      if (operation === "post") this.pump(index + 1, false);
    }
    this.options.onSettled();
    this.notifyIdle();
  }

  private isSynced(slot: Slot): boolean {
    if (slot.desired === "") return slot.id === undefined || slot.deleted;
    return !slot.deleted && slot.sent === slot.desired;
  }

  private isIdle(): boolean {
    return this.slots.every((slot) => !slot.inFlight && slot.timer === undefined);
  }

  private notifyIdle(): void {
    if (this.idleWaiters.length === 0 || !this.isIdle()) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const resolve of waiters) resolve();
  }

  private now(): number {
    return this.options.clock.now();
  }
}
