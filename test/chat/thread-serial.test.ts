import { describe, expect, it } from "vitest";
import { type ThreadRef, ThreadSerial } from "../../src/chat/index.js";
import { gate } from "../support/async.js";

const thread = (id: string): ThreadRef => ({ platform: "slack", workspace: "T", channel: "C", thread: id });

describe("ThreadSerial", () => {
  it("runs one thread's tasks in arrival order, other threads meanwhile, and forgets idle threads", async () => {
    const serial = new ThreadSerial();
    const order: string[] = [];
    const slow = gate();
    const first = serial.run(thread("a"), async () => {
      await slow.promise;
      order.push("a1");
    });
    const second = serial.run(thread("a"), async () => void order.push("a2"));
    await serial.run(thread("b"), async () => void order.push("b1"));
    expect(order).toEqual(["b1"]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(serial.size).toBe(1);
    slow.open();
    await Promise.all([first, second]);
    expect(order).toEqual(["b1", "a1", "a2"]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(serial.size).toBe(0);
  });

  it("lets the next task run after a failing one, and after one that holds the thread too long", async () => {
    const held: string[] = [];
    const serial = new ThreadSerial({ holdMs: 50, onHeld: (ref) => held.push(ref.thread) });
    const failing = serial.run(thread("a"), async () => {
      throw new Error("boom");
    });
    await expect(failing).rejects.toThrow("boom");
    expect(await serial.run(thread("a"), async () => "after failure")).toBe("after failure");
    const never = gate();
    void serial.run(thread("a"), () => never.promise);
    expect(await serial.run(thread("a"), async () => "after hold")).toBe("after hold");
    expect(held).toEqual(["a"]);
    never.open();
  });
});
