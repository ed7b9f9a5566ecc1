import type { App, Receiver, ReceiverEvent } from "@slack/bolt";
import type { SlackLogger } from "./options.js";

/** Options of {@link DeferredAckReceiver}. */
export interface DeferredAckOptions {
  /**
   * HTTP mode: when handling an event takes longer than this, answer a non-2xx status now (Slack stops
   * waiting after 3 s and would retry anyway); handling goes on, and the retry joins it. Default: no
   * deadline (Socket Mode: the envelope is simply acknowledged later; Slack's redelivery joins it too).
   */
  deadlineMs?: number;
  log: SlackLogger;
  /**
   * Called with each Events API body as it arrives, synchronously, before bolt's middleware sees it (the
   * gateway acknowledges mentions here). Must not throw. Default: nothing.
   */
  onEvent?: (body: Record<string, unknown>) => void;
  /**
   * Asked right after `onEvent`: a promise to wait for before bolt's middleware sees the event (the
   * acknowledgements asked for on arrival leave first), or `undefined` to go on at once. Must not throw.
   */
  hold?: () => Promise<void> | undefined;
}

/** Thrown to bolt when an event was not handled within {@link DeferredAckOptions.deadlineMs}. */
export class EventNotHandledYetError extends Error {
  constructor(readonly eventId: string | undefined) {
    super(`Slack event ${eventId ?? "(no id)"} not stored yet; answering non-2xx so Slack retries`);
    this.name = "EventNotHandledYetError";
  }
}

/**
 * Wraps bolt's receiver so that an Events API event (`event_callback`) is acknowledged only once our
 * listeners are done with it — stored by the gateway, or visibly given up — instead of before they run,
 * as bolt does. A listener that rejects leaves the event unacknowledged: Socket Mode sends no ack, so
 * Slack redelivers the envelope; HTTP mode answers 500 (the receiver's `processEventErrorHandler`), so
 * Slack retries with `X-Slack-Retry-Num`. Interactive payloads (button clicks) pass through untouched:
 * their listeners ack first themselves.
 */
export class DeferredAckReceiver implements Receiver {
  constructor(
    private readonly inner: Receiver,
    private readonly options: DeferredAckOptions,
  ) {}

  init(app: App): void {
    const processEvent = (event: ReceiverEvent) => this.process(app, event);
    // The inner receiver only calls `processEvent`; everything else is the app itself.
    const wrapped = new Proxy(app, {
      get: (target, property, receiver) =>
        property === "processEvent" ? processEvent : Reflect.get(target, property, receiver),
    });
    this.inner.init(wrapped);
  }

  start(...args: unknown[]): Promise<unknown> {
    return this.inner.start(...args);
  }

  stop(...args: unknown[]): Promise<unknown> {
    return this.inner.stop(...args);
  }

  private async process(app: App, event: ReceiverEvent): Promise<void> {
    if (event.body.type !== "event_callback") return app.processEvent(event);
    const eventId = typeof event.body.event_id === "string" ? event.body.event_id : undefined;
    try {
      this.options.onEvent?.(event.body);
    } catch (err) {
      this.options.log.warn({ err, eventId }, "slack: early event hook failed");
    }
    const held = this.options.hold?.();
    if (held) await held;
    let requested: { response: unknown } | undefined;
    const handling = app.processEvent({
      ...event,
      ack: async (response?: unknown) => {
        requested = { response };
      },
    });
    const { deadlineMs } = this.options;
    let timer: NodeJS.Timeout | undefined;
    const deadline =
      deadlineMs === undefined
        ? undefined
        : new Promise<"late">((resolve) => {
            timer = setTimeout(() => resolve("late"), deadlineMs);
          });
    try {
      const outcome = await (deadline ? Promise.race([handling, deadline]) : handling);
      if (outcome === "late") {
        // Whatever happens later is logged by the listeners; the retry joins the same handling.
        handling.catch(() => undefined);
        throw new EventNotHandledYetError(eventId);
      }
    } finally {
      clearTimeout(timer);
    }
    if (requested) await event.ack(requested.response);
  }
}
