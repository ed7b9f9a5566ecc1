import { describe, expect, it } from "vitest";
import {
  attachmentsOf,
  authorOf,
  baseEmoji,
  classifyMessageEvent,
  placeAllowed,
  threadOfMessage,
  withoutBotMention,
} from "../../src/slack/events.js";
import { approvalActionId, OPEN_ACCESS, parseApprovalAction } from "../../src/slack/index.js";

const self = { userId: "U0BOT", botId: "B0BOT" };

describe("Slack event normalization", () => {
  it("sorts message events into messages, edits, deletions and noise", () => {
    expect(
      classifyMessageEvent({ type: "message", channel: "C1", user: "U1", text: "hi", ts: "1.1" }).kind,
    ).toBe("message");
    expect(
      classifyMessageEvent({ type: "message", subtype: "channel_join", channel: "C1", ts: "1.2" }).kind,
    ).toBe("ignored");
    const edited = classifyMessageEvent({
      type: "message",
      subtype: "message_changed",
      channel: "C1",
      message: { user: "U1", text: "new", ts: "1.1", thread_ts: "1.0" },
      previous_message: { user: "U1", text: "old", ts: "1.1", thread_ts: "1.0" },
    });
    expect(edited).toEqual({
      kind: "edited",
      message: {
        user: "U1",
        text: "new",
        ts: "1.1",
        thread_ts: "1.0",
        channel: "C1",
        channel_type: undefined,
      },
    });
    // Reply-count bookkeeping arrives as a change with the same text.
    const bookkeeping = classifyMessageEvent({
      type: "message",
      subtype: "message_changed",
      channel: "C1",
      message: { user: "U1", text: "same", ts: "1.1" },
      previous_message: { user: "U1", text: "same", ts: "1.1" },
    });
    expect(bookkeeping.kind).toBe("ignored");
    expect(
      classifyMessageEvent({
        type: "message",
        subtype: "message_deleted",
        channel: "C1",
        deleted_ts: "1.1",
        previous_message: { ts: "1.1", thread_ts: "1.0" },
      }),
    ).toEqual({ kind: "deleted", ts: "1.1", threadTs: "1.0" });
  });

  it("ignores the bot itself and bots not on the allowlist; applies the user allowlist", () => {
    expect(authorOf({ user: "U0BOT", text: "x" }, self, OPEN_ACCESS)).toEqual({ kind: "self" });
    expect(authorOf({ bot_id: "B0BOT", text: "x" }, self, OPEN_ACCESS)).toEqual({ kind: "self" });
    expect(authorOf({ bot_id: "B0OTHER", subtype: "bot_message" }, self, OPEN_ACCESS)).toEqual({
      kind: "refused",
    });
    expect(
      authorOf({ bot_id: "B0OTHER", user: "U0OTHERBOT" }, self, { ...OPEN_ACCESS, bots: ["B0OTHER"] }),
    ).toEqual({
      kind: "person",
      id: "U0OTHERBOT",
      isBot: true,
    });
    expect(authorOf({ user: "U1" }, self, { ...OPEN_ACCESS, users: ["U2"] })).toEqual({ kind: "refused" });
    expect(authorOf({ user: "U2" }, self, { ...OPEN_ACCESS, users: ["U2"] })).toEqual({
      kind: "person",
      id: "U2",
      isBot: false,
    });
  });

  it("checks workspaces, channels and DMs against the allowlists", () => {
    const access = { ...OPEN_ACCESS, teams: ["T1"], channels: ["C1", "D1"], directMessages: false };
    expect(placeAllowed("T1", "C1", false, access)).toBe(true);
    expect(placeAllowed("T2", "C1", false, access)).toBe(false);
    expect(placeAllowed("T1", "C2", false, access)).toBe(false);
    expect(placeAllowed("T1", "D1", true, access)).toBe(false);
    expect(placeAllowed("T1", "D1", true, { ...access, directMessages: true })).toBe(true);
  });

  it("maps a message and its replies to one thread, strips the bot mention, lists files", () => {
    expect(threadOfMessage("T1", { channel: "C1", ts: "5.0" })).toEqual({
      platform: "slack",
      workspace: "T1",
      channel: "C1",
      thread: "5.0",
    });
    expect(threadOfMessage("T1", { channel: "C1", ts: "6.0", thread_ts: "5.0" }).thread).toBe("5.0");
    expect(withoutBotMention("<@U0BOT> please  help <@U2>", "U0BOT")).toBe("please help <@U2>");
    expect(withoutBotMention("<@U0BOT|threadline> stop", "U0BOT")).toBe("stop");
    expect(
      attachmentsOf([{ name: "a.png", mimetype: "image/png", size: 10, url_private: "https://f/a" }]),
    ).toEqual([{ name: "a.png", url: "https://f/a", mimeType: "image/png", sizeBytes: 10 }]);
    expect(baseEmoji("hourglass_flowing_sand::skin-tone-2")).toBe("hourglass_flowing_sand");
  });

  it("round-trips approval action ids", () => {
    expect(parseApprovalAction(approvalActionId("always", "12-abc"))).toEqual({
      decision: "always",
      approvalId: "12-abc",
    });
    expect(parseApprovalAction("something_else")).toBeUndefined();
  });

  it("round-trips the everyone-here decision and refuses forged decisions", () => {
    expect(parseApprovalAction(approvalActionId("alwaysThread", "a:b"))).toEqual({
      decision: "alwaysThread",
      approvalId: "a:b",
    });
    for (const forged of ["alwaysthread", "ALWAYS", "toString", "__proto__", "", "approve "]) {
      expect(parseApprovalAction(`threadline:${forged}:12-abc`)).toBeUndefined();
    }
    expect(parseApprovalAction("threadline:approve:")).toBeUndefined();
    expect(parseApprovalAction("threadline:approve")).toBeUndefined();
  });
});
