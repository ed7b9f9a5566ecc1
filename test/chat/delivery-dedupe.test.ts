import { describe, expect, it } from "vitest";
import { DeliveryDedupe } from "../../src/chat/index.js";
import { deferred } from "../support/async.js";

describe("DeliveryDedupe", () => {
  it("a second delivery while the first is in flight joins it instead of running again", async () => {
    const dedupe = new DeliveryDedupe();
    const gate = deferred<string>();
    let runs = 0;
    const task = () => {
      runs++;
      return gate.promise;
    };
    const first = dedupe.run("m1", task);
    const second = dedupe.run("m1", task);
    gate.resolve("stored");
    expect(await Promise.all([first, second])).toEqual(["stored", "stored"]);
    expect(runs).toBe(1);
    // After success too (a later redelivery), and other keys run on their own.
    expect(await dedupe.run("m1", async () => "again")).toBe("stored");
    expect(await dedupe.run("m2", async () => "other")).toBe("other");
  });

  it("forgets a delivery whose task failed, so the next one tries again", async () => {
    const dedupe = new DeliveryDedupe();
    await expect(dedupe.run("m1", async () => Promise.reject(new Error("redis away")))).rejects.toThrow(
      "redis away",
    );
    expect(dedupe.has("m1")).toBe(false);
    expect(await dedupe.run("m1", async () => "stored")).toBe("stored");
    expect(dedupe.has("m1")).toBe(true);
  });

  it("remembers at most maxEntries keys, forgetting the oldest first", async () => {
    const dedupe = new DeliveryDedupe({ maxEntries: 2 });
    for (const key of ["a", "b", "c"]) await dedupe.run(key, async () => key);
    expect(["a", "b", "c"].map((key) => dedupe.has(key))).toEqual([false, true, true]);
  });
});
