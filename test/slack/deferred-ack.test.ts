import type { App, Receiver, ReceiverEvent } from "@slack/bolt";
import { describe, expect, it } from "vitest";
import { AckGate } from "../../src/chat/index.js";
import { DeferredAckReceiver } from "../../src/slack/deferred-ack.js";
import { SILENT_SLACK_LOGGER } from "../../src/slack/options.js";

/** An inner receiver that only keeps the app it is given (what bolt's receivers call `processEvent` on). */
class CapturingReceiver implements Receiver {
  app!: App;
  init(app: App): void {
    this.app = app;
  }
  async start(): Promise<void> {}
  async stop(): Promise<void> {}
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

function event(id: string, acks: string[]): ReceiverEvent {
  return {
    body: { type: "event_callback", event_id: id, event: { type: "message" } },
    ack: async () => {
      acks.push(id);
    },
  };
}

describe("DeferredAckReceiver with an acknowledgement gate", () => {
  it("hands an event to bolt only once the acknowledgements asked for on its arrival are sent, in arrival order", async () => {
    const gate = new AckGate({ maxHoldMs: 60_000 });
    const seen: string[] = [];
    const acked: string[] = [];
    const sending: (() => void)[] = [];
    const inner = new CapturingReceiver();
    const receiver = new DeferredAckReceiver(inner, {
      log: SILENT_SLACK_LOGGER,
      // A mention asks for its 👀 on arrival: the gate counts it until it is sent.
      onEvent: () => gate.track(new Promise<void>((resolve) => sending.push(resolve))),
      hold: () => gate.hold(),
    });
    const app = {
      processEvent: async (received: ReceiverEvent) => {
        seen.push(String(received.body.event_id));
        await received.ack();
      },
    } as unknown as App;
    receiver.init(app);
    const handling = ["Ev1", "Ev2", "Ev3"].map((id) => inner.app.processEvent(event(id, acked)));
    await settle();
    // Three 👀 on their way: no event's handling (intake, lookups) has started.
    expect(seen).toEqual([]);
    sending[0]!();
    await settle();
    expect(seen).toEqual(["Ev1"]);
    sending[2]!();
    await settle();
    expect(seen).toEqual(["Ev1"]); // Ev2's own 👀 is still on its way
    sending[1]!();
    await Promise.all(handling);
    expect(seen).toEqual(["Ev1", "Ev2", "Ev3"]);
    expect(acked).toEqual(["Ev1", "Ev2", "Ev3"]);
  });

  it("without a hold, an event goes to bolt at once", async () => {
    const seen: string[] = [];
    const inner = new CapturingReceiver();
    const receiver = new DeferredAckReceiver(inner, { log: SILENT_SLACK_LOGGER, hold: () => undefined });
    receiver.init({
      processEvent: async (received: ReceiverEvent) => {
        seen.push(String(received.body.event_id));
      },
    } as unknown as App);
    const handling = inner.app.processEvent(event("Ev1", []));
    expect(seen).toEqual(["Ev1"]);
    await handling;
  });
});
