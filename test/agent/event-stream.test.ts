import { describe, expect, it } from "vitest";
import { EventStream } from "../../src/agent/index.js";

type Ev = { kind: "data"; n: number } | { kind: "end"; total: number };

function createStream(): EventStream<Ev, number> {
  return new EventStream<Ev, number>({
    isComplete: (event) => event.kind === "end",
    extractResult: (event) => (event.kind === "end" ? event.total : -1),
  });
}

async function drain(stream: EventStream<Ev, number>): Promise<Ev[]> {
  const seen: Ev[] = [];
  for await (const event of stream) seen.push(event);
  return seen;
}

describe("EventStream", () => {
  it("delivers events pushed before iteration starts, including the completing one", async () => {
    const stream = createStream();
    stream.push({ kind: "data", n: 1 });
    stream.push({ kind: "data", n: 2 });
    stream.push({ kind: "end", total: 3 });
    expect(await drain(stream)).toEqual([
      { kind: "data", n: 1 },
      { kind: "data", n: 2 },
      { kind: "end", total: 3 },
    ]);
    expect(await stream.result()).toBe(3);
  });

  it("hands events pushed during iteration to the waiting consumer in order", async () => {
    const stream = createStream();
    const seen = drain(stream);
    // The consumer is already waiting on next() when these arrive.
    await Promise.resolve();
    stream.push({ kind: "data", n: 1 });
    await Promise.resolve();
    stream.push({ kind: "data", n: 2 });
    stream.push({ kind: "end", total: 7 });
    expect(await seen).toEqual([
      { kind: "data", n: 1 },
      { kind: "data", n: 2 },
      { kind: "end", total: 7 },
    ]);
  });

  it("resolves result() at the completing event, before anyone iterates", async () => {
    const stream = createStream();
    let settled: number | undefined;
    void stream.result().then((value) => {
      settled = value;
    });
    stream.push({ kind: "data", n: 1 });
    await Promise.resolve();
    expect(settled).toBeUndefined();
    stream.push({ kind: "end", total: 42 });
    await expect(stream.result()).resolves.toBe(42);
    expect(settled).toBe(42);
  });

  it("drops events pushed after completion", async () => {
    const stream = createStream();
    stream.push({ kind: "end", total: 1 });
    stream.push({ kind: "data", n: 99 });
    stream.push({ kind: "end", total: 2 });
    expect(await drain(stream)).toEqual([{ kind: "end", total: 1 }]);
    expect(await stream.result()).toBe(1);
  });

  it("end(result) finishes a waiting consumer and resolves result(); later pushes are dropped", async () => {
    const stream = createStream();
    const seen = drain(stream);
    stream.push({ kind: "data", n: 1 });
    await Promise.resolve();
    stream.end(5);
    stream.push({ kind: "data", n: 2 });
    expect(await seen).toEqual([{ kind: "data", n: 1 }]);
    expect(await stream.result()).toBe(5);
  });

  it("end() without a result ends iteration but leaves result() pending", async () => {
    const stream = createStream();
    stream.push({ kind: "data", n: 1 });
    stream.end();
    expect(await drain(stream)).toEqual([{ kind: "data", n: 1 }]);
    const marker = Symbol("pending");
    const raced = await Promise.race([stream.result(), new Promise((r) => setImmediate(() => r(marker)))]);
    expect(raced).toBe(marker);
  });
});
