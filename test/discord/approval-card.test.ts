import { describe, expect, it } from "vitest";
import type { ApprovalCard } from "../../src/chat/index.js";
import { approvalCustomId, approvalMessageBody, parseApprovalCustomId } from "../../src/discord/index.js";

const alice = { id: "U1", name: "Alice" };
const bob = { id: "U9", name: "Bob_the*approver" };
const card = (state: ApprovalCard["state"], overrides: Partial<ApprovalCard> = {}): ApprovalCard => ({
  approvalId: "4-0123456789ab",
  toolName: "deploy",
  argumentsText: "service: prod",
  approvers: ["Alice", "<@U9>"],
  requesterName: "Alice",
  expiresAt: 1_700_000_600_000,
  state,
  ...overrides,
});

describe("Discord approval cards", () => {
  it("round-trips the approval id through the buttons' custom ids and ignores other ids", () => {
    expect(approvalCustomId("always", "4-abc")).toBe("tl:always:4-abc");
    expect(parseApprovalCustomId("tl:deny:4-abc")).toEqual({ decision: "deny", approvalId: "4-abc" });
    expect(parseApprovalCustomId("tl:maybe:4-abc")).toBeUndefined();
    expect(parseApprovalCustomId("other:approve:4-abc")).toBeUndefined();
    expect(parseApprovalCustomId("tl:approve:")).toBeUndefined();
  });

  it("round-trips the everyone-here decision and refuses forged decisions", () => {
    expect(parseApprovalCustomId(approvalCustomId("alwaysThread", "4-a:b"))).toEqual({
      decision: "alwaysThread",
      approvalId: "4-a:b",
    });
    for (const forged of ["alwaysthread", "ALWAYS", "toString", "__proto__", "", "always "]) {
      expect(parseApprovalCustomId(`tl:${forged}:4-abc`)).toBeUndefined();
    }
  });

  it("shows a pending card with the arguments, who decides, the expiry, waiting messages and the buttons", () => {
    const body = approvalMessageBody(card({ kind: "pending", waitingMessages: 2 }));
    expect(body.content).toBe("🔐 Approval needed to run `deploy`");
    expect(body.embeds).toEqual([
      {
        title: "Approval needed: deploy",
        description: "```\nservice: prod\n```",
        color: 0xf0b232,
        fields: [
          { name: "Who can decide", value: "Alice, <@U9>" },
          { name: "Expires", value: "<t:1700000600:R>" },
          { name: "Waiting", value: "⏳ 2 messages waiting for this decision" },
        ],
      },
    ]);
    expect(body.components).toEqual([
      {
        type: 1,
        components: [
          { type: 2, style: 3, label: "Approve", custom_id: "tl:approve:4-0123456789ab" },
          { type: 2, style: 4, label: "Deny", custom_id: "tl:deny:4-0123456789ab" },
          {
            type: 2,
            style: 2,
            label: "Always allow deploy for Alice in this thread",
            custom_id: "tl:always:4-0123456789ab",
          },
          { type: 2, style: 2, label: "Edit and approve…", custom_id: "tl:edit:4-0123456789ab" },
          { type: 2, style: 2, label: "Deny with reason…", custom_id: "tl:reason:4-0123456789ab" },
        ],
      },
      {
        type: 1,
        components: [
          {
            type: 2,
            style: 2,
            label: "Always allow deploy for everyone here (approvers)",
            custom_id: "tl:alwaysThread:4-0123456789ab",
          },
        ],
      },
    ]);
    expect(body.allowed_mentions).toEqual({ parse: [] });
  });

  it("shows each decision without buttons", () => {
    const at = 1_700_000_100_000;
    const decision = (state: ApprovalCard["state"]) => {
      const body = approvalMessageBody(card(state));
      expect(body.components).toEqual([]);
      return body.embeds[0]?.fields?.[0]?.value;
    };
    expect(decision({ kind: "approved", by: alice, at, always: false })).toBe(
      "✅ Approved by Alice, <t:1700000100:f>",
    );
    expect(decision({ kind: "approved", by: alice, at, always: true })).toBe(
      "✅ Always allowed `deploy` for Alice in this thread — by Alice, <t:1700000100:f>",
    );
    expect(decision({ kind: "approved", by: bob, at, always: true, scope: "requester" })).toBe(
      "✅ Always allowed `deploy` for Alice in this thread — by Bob\\_the\\*approver, <t:1700000100:f>",
    );
    expect(decision({ kind: "approved", by: alice, at, always: true, scope: "thread" })).toBe(
      "✅ Always allowed `deploy` for everyone in this thread — by Alice, <t:1700000100:f>",
    );
    expect(decision({ kind: "denied", by: alice, at })).toBe("❌ Denied by Alice, <t:1700000100:f>");
    expect(decision({ kind: "expired", at })).toBe("⌛ Denied: approval timed out, <t:1700000100:f>");
    expect(decision({ kind: "cancelled", reason: "The run was stopped." })).toBe(
      "🚫 Cancelled: The run was stopped.",
    );
  });

  it("keeps every part within Discord's limits and code fences intact", () => {
    const huge = card(
      { kind: "pending", waitingMessages: 0 },
      {
        toolName: "t".repeat(300),
        argumentsText: `a\`\`\`b${"x".repeat(5000)}`,
        approvers: ["y".repeat(2000)],
        requesterName: "r".repeat(100),
        approvalId: "i".repeat(84),
      },
    );
    const body = approvalMessageBody(huge);
    const embed = body.embeds[0]!;
    expect(embed.title!.length).toBeLessThanOrEqual(256);
    expect(embed.description!.length).toBeLessThanOrEqual(4096);
    expect(embed.description!.match(/```/g)).toHaveLength(2);
    expect(embed.fields![0]!.value.length).toBeLessThanOrEqual(1024);
    const buttons = body.components.flatMap((row) => row.components);
    expect(buttons).toHaveLength(6);
    for (const button of buttons) {
      expect("label" in button && button.label!.length).toBeLessThanOrEqual(80);
      expect("custom_id" in button && button.custom_id.length).toBeLessThanOrEqual(100);
    }
    expect(buttons.map((button) => ("label" in button ? button.label : ""))).toEqual([
      "Approve",
      "Deny",
      expect.stringMatching(/^Always allow t+… for r+… in this thread$/),
      "Edit and approve…",
      "Deny with reason…",
      expect.stringMatching(/^Always allow t+… for everyone here \(approvers\)$/),
    ]);
  });

  it("offers no everyone-here button when only the requester may decide", () => {
    const body = approvalMessageBody(card({ kind: "pending", waitingMessages: 0 }, { approvers: ["Alice"] }));
    const ids = body.components.flatMap((row) =>
      row.components.map((button) => ("custom_id" in button ? button.custom_id : "")),
    );
    expect(ids).toEqual([
      "tl:approve:4-0123456789ab",
      "tl:deny:4-0123456789ab",
      "tl:always:4-0123456789ab",
      "tl:edit:4-0123456789ab",
      "tl:reason:4-0123456789ab",
    ]);
  });
});
