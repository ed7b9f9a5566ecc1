import { describe, expect, it } from "vitest";
import type { AgentMessage } from "../../src/agent/index.js";
import { RunInterrupts } from "../../src/runs/run-interrupts.js";

const steer: AgentMessage = { role: "user", content: [{ type: "text", text: "steer" }], timestamp: 0 };

/** A RunInterrupts whose steering drain answers from `queue` and counts its calls, as the session's does. */
function setUp() {
  const queue: AgentMessage[] = [];
  let drains = 0;
  const interrupts = new RunInterrupts(async () => []);
  const drainSteering = async () => {
    drains++;
    interrupts.beforeDrain("steer");
    return queue.splice(0, 1);
  };
  return { interrupts, queue, poll: () => interrupts.pollSteering(drainSteering), drains: () => drains };
}

describe("RunInterrupts.pollSteering (the loop's steering poll)", () => {
  it("answers a poll right after an empty one from memory, and reads Redis again after a model request", async () => {
    const { interrupts, poll, drains } = setUp();
    expect(await poll()).toEqual([]);
    expect(await poll()).toEqual([]);
    expect(drains()).toBe(1);
    interrupts.requestStarted();
    expect(await poll()).toEqual([]);
    expect(drains()).toBe(2);
  });

  it("drains when a steer was announced after the empty poll (bus event or heartbeat)", async () => {
    for (const announce of [
      (interrupts: RunInterrupts) => interrupts.arrived("steer", "U1"),
      (interrupts: RunInterrupts) => interrupts.observe({ kind: "steer", by: "U1" }),
    ]) {
      const { interrupts, queue, poll, drains } = setUp();
      expect(await poll()).toEqual([]);
      queue.push(steer);
      announce(interrupts);
      expect(await poll()).toEqual([steer]);
      expect(drains()).toBe(2);
    }
  });

  it("drains when another drain ran after the empty poll, and after a poll that took something", async () => {
    const { interrupts, queue, poll, drains } = setUp();
    expect(await poll()).toEqual([]);
    interrupts.beforeDrain("followUp");
    queue.push(steer);
    expect(await poll()).toEqual([steer]);
    expect(await poll()).toEqual([]);
    expect(drains()).toBe(3);
  });
});
