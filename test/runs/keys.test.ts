import { describe, expect, it } from "vitest";
import { discordRestBudgetPrefix, slackKeys } from "../../src/runs/index.js";

// The adapters' keys hold data written by earlier releases: their strings must not change.
describe("adapter keys", () => {
  it("builds Slack's recipient and session title keys per team, channel and thread", () => {
    const keys = slackKeys("tl");
    const thread = {
      platform: "slack",
      workspace: "T1",
      channel: "C1",
      thread: "1700000000.000100",
    } as const;
    expect(keys.recipient(thread)).toBe("tl:slack-recipient:T1:C1:1700000000.000100");
    expect(keys.title(thread)).toBe("tl:slack-title:T1:C1:1700000000.000100");
    expect(keys.rateLimit("chat.update")).toBe("tl:slack-rl:chat.update");
  });

  it("puts Discord's REST budget under <prefix>:discord:rest", () => {
    expect(discordRestBudgetPrefix("tl")).toBe("tl:discord:rest");
  });
});
