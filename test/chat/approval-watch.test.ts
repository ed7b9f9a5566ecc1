import { describe, expect, it } from "vitest";
import { type ChatOutbound, watchApprovals } from "../../src/chat/index.js";
import { MemoryOutbound } from "../fakes/memory-outbound.js";

describe("watchApprovals", () => {
  it("passes the outbound's background writes through: a worker awaiting the wrapper awaits the platform's", async () => {
    const chat = new MemoryOutbound();
    let waitedOn: unknown;
    const outbound: ChatOutbound = Object.assign(Object.create(chat) as ChatOutbound, {
      settled(this: unknown) {
        waitedOn = this;
        return Promise.resolve();
      },
    });
    const wrapped = watchApprovals(outbound);
    await wrapped.settled?.();
    expect(waitedOn).toBe(outbound);
    expect(watchApprovals(chat).settled).toBeUndefined();
  });
});
