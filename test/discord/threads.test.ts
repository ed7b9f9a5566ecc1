import { describe, expect, it } from "vitest";
import { channelOfMessage, threadName, threadRefIn } from "../../src/discord/index.js";

describe("Discord thread references", () => {
  it("maps a mention in a text channel to the thread started on it (same id)", () => {
    const ref = threadRefIn({ kind: "text", guildId: "G", channelId: "C" }, "M");
    expect(ref).toEqual({ platform: "discord", workspace: "G", channel: "C", thread: "M" });
    expect(channelOfMessage(ref!, "M")).toBe("C");
    expect(channelOfMessage(ref!, "OTHER")).toBe("M");
  });

  it("keeps the parent channel of a thread, and addresses its messages in the thread", () => {
    const ref = threadRefIn(
      { kind: "thread", guildId: "G", threadId: "T", parentId: "C", forum: false },
      "M",
    );
    expect(ref).toEqual({ platform: "discord", workspace: "G", channel: "C", thread: "T" });
    expect(channelOfMessage(ref!, "M")).toBe("T");
    expect(channelOfMessage(ref!, "T")).toBe("C");
  });

  it("makes a forum post its own channel, since its starter message lives inside it", () => {
    const ref = threadRefIn({ kind: "thread", guildId: "G", threadId: "P", parentId: "F", forum: true }, "P");
    expect(ref).toEqual({ platform: "discord", workspace: "G", channel: "P", thread: "P" });
    expect(channelOfMessage(ref!, "P")).toBe("P");
  });

  it("makes a DM channel one thread and ignores other places", () => {
    const ref = threadRefIn({ kind: "dm", channelId: "D" }, "M");
    expect(ref).toEqual({ platform: "discord", workspace: "@me", channel: "D", thread: "D" });
    expect(channelOfMessage(ref!, "M")).toBe("D");
    expect(threadRefIn({ kind: "other" }, "M")).toBeUndefined();
  });

  it("names a thread after the first line of the request, within Discord's 100 characters", () => {
    expect(threadName("  **Summarize** the `docs`\nplease")).toBe("Summarize the docs");
    expect(threadName("\n\n  ")).toBe("Threadline");
    const long = threadName(`${"word ".repeat(40)}end`);
    expect(long.length).toBeLessThanOrEqual(100);
    expect(long.endsWith("word…")).toBe(true);
    expect(threadName("x".repeat(150))).toBe(`${"x".repeat(99)}…`);
  });
});
