import { describe, expect, it } from "vitest";
import {
  APPROVAL_DECISIONS,
  approvalButtonId,
  approvalIdCodec,
  parseApprovalButtonId,
} from "../../src/chat/index.js";
import { APPROVAL_MODAL_PREFIX, parseApprovalFormId } from "../../src/discord/approval-modal.js";
import { parseApprovalCustomId } from "../../src/discord/index.js";
import { parseApprovalFormAction } from "../../src/slack/approval-modal.js";
import { parseApprovalAction } from "../../src/slack/index.js";

describe("the approval button id codec", () => {
  it("round-trips every decision and both forms, with a `:` inside the approval id", () => {
    for (const decision of APPROVAL_DECISIONS) {
      expect(parseApprovalButtonId("tl", approvalButtonId("tl", decision, "4-a:b"))).toEqual({
        kind: "decision",
        decision,
        approvalId: "4-a:b",
      });
    }
    for (const form of ["reason", "edit"] as const) {
      expect(parseApprovalButtonId("threadline", approvalButtonId("threadline", form, "9"))).toEqual({
        kind: "form",
        form,
        approvalId: "9",
      });
    }
  });

  it("decides nothing for another prefix, an unknown action, or a missing approval id", () => {
    expect(parseApprovalButtonId("tl", "tlm:edit:4")).toBeUndefined();
    expect(parseApprovalButtonId("tl", "tlx:approve:4")).toBeUndefined();
    expect(parseApprovalButtonId("tl", "tl:maybe:4")).toBeUndefined();
    expect(parseApprovalButtonId("tl", "tl:__proto__:4")).toBeUndefined();
    expect(parseApprovalButtonId("tl", "tl:approve:")).toBeUndefined();
    expect(parseApprovalButtonId("tl", "tl:approve")).toBeUndefined();
    expect(parseApprovalButtonId("threadline", "threadline:feedback")).toBeUndefined();
  });

  // Ids exactly as the adapters posted them before they shared this codec: cards already in channels
  // must keep working after an upgrade, so these literals are the wire format and must not change.
  it("decodes the ids on cards posted by earlier versions, on both platforms", () => {
    const modal = approvalIdCodec(APPROVAL_MODAL_PREFIX).parseForm;
    const posted: [(id: string) => unknown, string, unknown][] = [
      [
        parseApprovalAction,
        "threadline:alwaysThread:12-abc",
        { decision: "alwaysThread", approvalId: "12-abc" },
      ],
      [parseApprovalFormAction, "threadline:reason:12-abc", { form: "reason", approvalId: "12-abc" }],
      [parseApprovalAction, "threadline:reason:12-abc", undefined],
      [parseApprovalCustomId, "tl:deny:4-0123456789ab", { decision: "deny", approvalId: "4-0123456789ab" }],
      [parseApprovalFormId, "tl:edit:4-0123456789ab", { form: "edit", approvalId: "4-0123456789ab" }],
      [modal, "tlm:edit:4-0123456789ab", { form: "edit", approvalId: "4-0123456789ab" }],
      [parseApprovalCustomId, "tl:edit:4-0123456789ab", undefined],
    ];
    for (const [parse, id, expected] of posted) expect(parse(id), id).toEqual(expected);
  });
});
