import { describe, expect, it } from "vitest";
import {
  APPROVAL_DECISIONS,
  type ApprovalCard,
  approvalButtonLabels,
  approvalCardText,
  isApprovalDecision,
  MARKDOWN_DIALECT,
  offersThreadGrant,
  renderArguments,
} from "../../src/chat/index.js";
import { DISCORD_DIALECT } from "../../src/discord/dialect.js";
import { SLACK_DIALECT } from "../../src/slack/dialect.js";

const DIALECTS = { markdown: MARKDOWN_DIALECT, slack: SLACK_DIALECT, discord: DISCORD_DIALECT } as const;

describe("renderArguments", () => {
  it("renders flat arguments as key: value lines, multi-line strings indented under their key", () => {
    const args = {
      path: "/etc/hosts",
      lines: 3,
      force: true,
      note: null,
      empty: "",
      padded: " x ",
      script: "echo a\necho b",
    };
    expect(renderArguments(args, 500)).toBe(
      [
        "path: /etc/hosts",
        "lines: 3",
        "force: true",
        "note: null",
        'empty: ""',
        'padded: " x "',
        "script:",
        "  echo a",
        "  echo b",
      ].join("\n"),
    );
  });

  it("pretty-prints nested arguments as JSON", () => {
    expect(renderArguments({ query: { q: "x", tags: ["a"] }, limit: 5 }, 500)).toBe(
      '{\n  "query": {\n    "q": "x",\n    "tags": [\n      "a"\n    ]\n  },\n  "limit": 5\n}',
    );
  });

  it("says when there are no arguments", () => {
    expect(renderArguments({}, 100)).toBe("(no arguments)");
    expect(renderArguments({ skipped: undefined }, 100)).toBe("(no arguments)");
  });

  it("shortens a huge string and says how much was left out, keeping the other arguments", () => {
    const text = renderArguments({ content: "x".repeat(5000), path: "a.txt" }, 300);
    expect(text.length).toBeLessThanOrEqual(300);
    expect(text).toBe(`content: ${"x".repeat(150)}… (truncated, 4850 more characters)\npath: a.txt`);
  });

  it("shortens strings inside nested arguments too", () => {
    const text = renderArguments({ files: [{ name: "a", body: "y".repeat(3000) }] }, 400);
    expect(text.length).toBeLessThanOrEqual(400);
    expect(text).toContain('"name": "a"');
    expect(text).toMatch(/y… \(truncated, \d+ more characters\)"/);
  });

  it("cuts many arguments at a line and notes the rest, never exceeding the limit", () => {
    const args = Object.fromEntries(
      Array.from({ length: 200 }, (_, index) => [`key${index}`, `value ${index}`]),
    );
    const text = renderArguments(args, 300);
    expect(text.length).toBeLessThanOrEqual(300);
    const [body, note] = text.split("\n… ");
    expect(body?.split("\n").every((line) => /^key\d+: value \d+$/.test(line))).toBe(true);
    const full = renderArguments(args, 100_000);
    expect(note).toBe(`(truncated, ${full.length - body!.length} more characters)`);
  });

  it("survives cycles and BigInts", () => {
    const cyclic: Record<string, unknown> = { name: "loop" };
    cyclic.self = cyclic;
    expect(renderArguments({ node: cyclic, big: 10n }, 500)).toContain('"self": "[circular]"');
    expect(renderArguments({ big: 10n }, 500)).toBe("big: 10");
  });
});

const card: ApprovalCard = {
  approvalId: "a1",
  toolName: "shell",
  argumentsText: "command: rm -rf /tmp/x && echo <done>",
  approvers: ["Ada", "Grace"],
  requesterName: "Ada",
  expiresAt: Date.UTC(2026, 0, 2, 14, 5),
  state: { kind: "pending", waitingMessages: 2 },
};
const ada = { id: "U1", name: "Ada" };
const grace = { id: "U2", name: "Grace" };
const at = Date.UTC(2026, 0, 2, 14, 1);

describe("approvalCardText", () => {
  it("shows a pending card with tool, arguments, who may decide, expiry and waiting messages", () => {
    expect(approvalCardText(card, DIALECTS.markdown)).toBe(
      [
        "🔐 **Approval needed** to run `shell`",
        "```",
        "command: rm -rf /tmp/x && echo <done>",
        "```",
        "Ada, Grace can decide. Expires at 2026-01-02 14:05 UTC.",
        "⏳ 2 messages waiting for this decision.",
      ].join("\n"),
    );
  });

  it("uses Slack mrkdwn, escaping and native dates for Slack", () => {
    const text = approvalCardText(
      { ...card, state: { kind: "pending", waitingMessages: 0 } },
      DIALECTS.slack,
    );
    expect(text).toBe(
      [
        "🔐 *Approval needed* to run `shell`",
        "```",
        "command: rm -rf /tmp/x &amp;&amp; echo &lt;done&gt;",
        "```",
        "Ada, Grace can decide. Expires at <!date^1767362700^{time}|2026-01-02 14:05 UTC>.",
      ].join("\n"),
    );
  });

  it.each([
    [{ kind: "approved", by: ada, at, always: false }, "discord", "✅ **Approved** by Ada, <t:1767362460:f>"],
    [
      { kind: "approved", by: ada, at, always: true },
      "markdown",
      "✅ **Always allowed** `shell` for Ada in this thread — by Ada, 2026-01-02 14:01 UTC",
    ],
    [
      { kind: "approved", by: grace, at, always: true, scope: "requester" },
      "discord",
      "✅ **Always allowed** `shell` for Ada in this thread — by Grace, <t:1767362460:f>",
    ],
    [
      { kind: "approved", by: grace, at, always: true, scope: "thread" },
      "slack",
      "✅ *Always allowed* `shell` for everyone in this thread — by Grace, <!date^1767362460^{date_short_pretty} {time}|2026-01-02 14:01 UTC>",
    ],
    [
      { kind: "denied", by: ada, at },
      "slack",
      "❌ *Denied* by Ada, <!date^1767362460^{date_short_pretty} {time}|2026-01-02 14:01 UTC>",
    ],
    [{ kind: "expired", at }, "markdown", "⌛ **Denied**: approval timed out, 2026-01-02 14:01 UTC"],
    [
      { kind: "cancelled", reason: "the run was stopped" },
      "markdown",
      "🚫 **Cancelled**: the run was stopped",
    ],
  ] as const)("shows the decision %j (%s)", (state, dialect, line) => {
    const text = approvalCardText({ ...card, state }, DIALECTS[dialect]);
    expect(text.split("\n").at(-1)).toBe(line);
    expect(text.split("\n")[0]).toMatch(/^🔐 \*{1,2}Approval\*{1,2} to run `shell`$/);
    expect(text).not.toContain("can decide");
  });

  it("keeps the code block intact when the arguments contain a fence", () => {
    const text = approvalCardText({ ...card, argumentsText: "a\n```\nb" }, DIALECTS.markdown);
    expect(text.match(/^```$/gm)).toHaveLength(2);
  });
});

describe("approval card grants", () => {
  it("names the requester (escaped) in an always grant, and 'the requester' when the card has no name", () => {
    const state = { kind: "approved", by: grace, at, always: true } as const;
    const line = (requesterName: string) =>
      approvalCardText({ ...card, requesterName, state }, DIALECTS.markdown)
        .split("\n")
        .at(-1);
    expect(line("ada_l*")).toBe(
      "✅ **Always allowed** `shell` for ada\\_l\\* in this thread — by Grace, 2026-01-02 14:01 UTC",
    );
    expect(line(" ")).toContain("for the requester in this thread");
  });

  it("shows what an edit and approve changed, one compact line per field", () => {
    const approved = {
      ...card,
      state: {
        kind: "approved" as const,
        by: { id: "U2", name: "Grace" },
        at: 0,
        always: false,
        changes: ['cmd: "rm -rf /" → "ls"'],
      },
    };
    expect(approvalCardText(approved, DIALECTS.markdown).split("\n").slice(-2)).toEqual([
      "✏️ **Edited before approval**:",
      '• `cmd: "rm -rf /" → "ls"`',
    ]);
    expect(approvalCardText(approved, DIALECTS.slack)).toContain("✏️ *Edited before approval*:");
  });

  it("labels the buttons with the tool and whom an always grant covers", () => {
    expect(approvalButtonLabels(card, 75)).toEqual({
      approve: "Approve",
      deny: "Deny",
      denyWithReason: "Deny with reason…",
      edit: "Edit and approve…",
      always: "Always allow shell for Ada in this thread",
      alwaysThread: "Always allow shell for everyone here (approvers)",
    });
  });

  it.each([75, 80])(
    "shortens long names to fit %i characters, keeping the words that say who is covered",
    (max) => {
      const long = { toolName: `deploy_${"x".repeat(70)}`, requesterName: `Alexandria ${"Y".repeat(80)}` };
      const labels = approvalButtonLabels(long, max);
      for (const label of Object.values(labels)) expect(label.length).toBeLessThanOrEqual(max);
      expect(labels.always).toMatch(/^Always allow deploy_x+… for Alexandria Y+… in this thread$/);
      expect(labels.alwaysThread).toMatch(/^Always allow deploy_x+… for everyone here \(approvers\)$/);
      expect(labels.always.length).toBe(max);
      // A short name is kept whole; the long one gets the rest of the room.
      const short = approvalButtonLabels({ toolName: "sh", requesterName: long.requesterName }, max);
      expect(short.always).toMatch(/^Always allow sh for Alexandria Y+… in this thread$/);
      expect(short.always.length).toBe(max);
    },
  );

  it("never splits a surrogate pair when shortening a name", () => {
    const labels = approvalButtonLabels({ toolName: "deploy", requesterName: "😀".repeat(60) }, 75);
    expect(labels.always.length).toBeLessThanOrEqual(75);
    expect(labels.always).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])/);
  });

  it("offers the everyone-here grant only when someone besides the requester may decide", () => {
    expect(offersThreadGrant(card)).toBe(true);
    expect(offersThreadGrant({ ...card, approvers: ["Ada"] })).toBe(false);
    expect(offersThreadGrant({ ...card, approvers: [] })).toBe(false);
  });

  it("knows every decision and nothing else", () => {
    expect(APPROVAL_DECISIONS).toEqual(["approve", "deny", "always", "alwaysThread"]);
    for (const decision of APPROVAL_DECISIONS) expect(isApprovalDecision(decision)).toBe(true);
    for (const forged of ["ALWAYS", "alwaysthread", "toString", "__proto__", "", 1, null, undefined]) {
      expect(isApprovalDecision(forged)).toBe(false);
    }
  });
});
