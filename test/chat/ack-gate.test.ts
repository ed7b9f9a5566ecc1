import { describe, expect, it } from "vitest";
import { AckGate } from "../../src/chat/index.js";

/** A promise settled by hand. */
function deferred() {
  let resolve!: () => void;
  let reject!: (err: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Lets every settled promise's reactions run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe("AckGate", () => {
  it("holds nothing while no acknowledgement is on its way", () => {
    const gate = new AckGate();
    expect(gate.hold()).toBeUndefined();
    gate.track(Promise.resolve());
    expect(gate.pending).toBe(1);
  });

  it("holds an event until the acknowledgements asked for before it are sent, not the later ones", async () => {
    const gate = new AckGate({ maxHoldMs: 60_000 });
    const first = deferred();
    const second = deferred();
    gate.track(first.promise);
    const order: string[] = [];
    void gate.hold()!.then(() => order.push("after first"));
    gate.track(second.promise);
    void gate.hold()!.then(() => order.push("after second"));
    await settle();
    expect(order).toEqual([]);
    first.resolve();
    await settle();
    expect(order).toEqual(["after first"]);
    second.reject(new Error("refused")); // a failed reaction is not waited for either
    await settle();
    expect(order).toEqual(["after first", "after second"]);
    expect(gate.pending).toBe(0);
    expect(gate.hold()).toBeUndefined();
  });

  it("lets held events go in arrival order, even when a later acknowledgement is sent first", async () => {
    const gate = new AckGate({ maxHoldMs: 60_000 });
    const first = deferred();
    const second = deferred();
    gate.track(first.promise);
    gate.track(second.promise);
    const order: string[] = [];
    void gate.hold()!.then(() => order.push("a"));
    void gate.hold()!.then(() => order.push("b"));
    second.resolve();
    await settle();
    expect(order).toEqual([]);
    first.resolve();
    await settle();
    expect(order).toEqual(["a", "b"]);
  });

  it("never holds longer than maxHoldMs (a reaction waiting for its budget does not hold the intake)", async () => {
    const gate = new AckGate({ maxHoldMs: 20 });
    gate.track(new Promise(() => {}));
    const started = performance.now();
    const order: string[] = [];
    const a = gate.hold()!.then(() => order.push("a"));
    const b = gate.hold()!.then(() => order.push("b"));
    await Promise.all([a, b]);
    expect(performance.now() - started).toBeGreaterThanOrEqual(15);
    expect(order).toEqual(["a", "b"]);
    // Given up after the same bound: the events after it are not held by it any more.
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(gate.pending).toBe(0);
    expect(gate.hold()).toBeUndefined();
  });
});
