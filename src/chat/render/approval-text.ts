import type { ApprovalCard, ApprovalCardState, ChatDialect } from "../types.js";

/** Strings are never cut shorter than this while fitting arguments into `maxChars`. */
const MIN_STRING_CHARS = 40;

/**
 * Renders tool-call arguments for a human deciding on them. Objects whose values are all scalars become
 * `key: value` lines (multi-line strings follow their key, indented by two spaces); anything nested is
 * pretty-printed JSON. When the result exceeds `maxChars`, long strings are shortened first
 * (`…… (truncated, N more characters)`), then the text is cut with a final line
 * `… (truncated, N more characters)`. The result never exceeds `maxChars` (for `maxChars` ≥ 60).
 * `{}` renders as `(no arguments)`. Never throws (cycles and BigInts included).
 */
export function renderArguments(args: Record<string, unknown>, maxChars: number): string {
  const entries = Object.entries(args).filter(([, value]) => value !== undefined);
  if (entries.length === 0) return "(no arguments)";
  let cap = Number.POSITIVE_INFINITY;
  let text = formatArguments(entries, cap);
  while (text.length > maxChars && cap > MIN_STRING_CHARS) {
    cap = Math.max(MIN_STRING_CHARS, Math.floor((Number.isFinite(cap) ? cap : maxChars) / 2));
    text = formatArguments(entries, cap);
  }
  return text.length <= maxChars ? text : cutWithNote(text, maxChars);
}

function formatArguments(entries: [string, unknown][], cap: number): string {
  const lines: string[] = [];
  for (const [key, value] of entries) {
    if (!isScalar(value)) break;
    lines.push(scalarLine(key, value, cap));
  }
  if (lines.length === entries.length) return lines.join("\n");
  const seen = new WeakSet<object>();
  return JSON.stringify(
    Object.fromEntries(entries),
    (_key, value: unknown) => {
      if (typeof value === "string") return shorten(value, cap);
      if (typeof value === "bigint") return value.toString();
      if (typeof value === "object" && value !== null) {
        if (seen.has(value)) return "[circular]";
        seen.add(value);
      }
      return value;
    },
    2,
  );
}

function isScalar(value: unknown): value is string | number | boolean | null | bigint {
  return value === null || ["string", "number", "boolean", "bigint"].includes(typeof value);
}

function scalarLine(key: string, value: string | number | boolean | null | bigint, cap: number): string {
  if (typeof value !== "string") return `${key}: ${String(value)}`;
  const text = shorten(value, cap);
  if (text.includes("\n")) return `${key}:\n${text.replace(/^/gm, "  ")}`;
  // Quote what would otherwise be invisible or ambiguous.
  if (text === "" || text.trim() !== text) return `${key}: ${JSON.stringify(text)}`;
  return `${key}: ${text}`;
}

function shorten(text: string, cap: number): string {
  if (text.length <= cap) return text;
  const kept = safeSlice(text, cap);
  return `${kept}… (truncated, ${text.length - kept.length} more characters)`;
}

function cutWithNote(text: string, maxChars: number): string {
  const note = (rest: number) => `\n… (truncated, ${rest} more characters)`;
  const room = maxChars - note(text.length).length;
  if (room <= 0) return safeSlice(text, maxChars);
  let kept = safeSlice(text, room);
  const lineEnd = kept.lastIndexOf("\n");
  if (lineEnd > room / 2) kept = kept.slice(0, lineEnd);
  return `${kept}${note(text.length - kept.length)}`;
}

/** `text.slice(0, length)` without splitting a surrogate pair. */
function safeSlice(text: string, length: number): string {
  const code = text.charCodeAt(length - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? length - 1 : length);
}

/**
 * Who an approved card's "always" covers: `"requester"` (the default when `scope` is missing),
 * `"thread"` (everyone in the thread), or `undefined` for a one-time approval.
 */
export function alwaysScope(state: ApprovalCardState): "requester" | "thread" | undefined {
  if (state.kind !== "approved" || !state.always) return undefined;
  return state.scope ?? "requester";
}

/** The requester's name as cards show it (`the requester` when the card has none). */
export function requesterOf(card: Pick<ApprovalCard, "requesterName">): string {
  // Cards stored before requesterName existed may lack it at run time.
  const name: unknown = card.requesterName;
  return typeof name === "string" && name.trim() !== "" ? name : "the requester";
}

/**
 * Whether a pending card offers the second "Always allow … for everyone here" choice: only when someone
 * besides the requester may decide (`approvers` lists the requester and the configured approvers), since
 * the runs layer accepts that decision from configured approvers only.
 */
export function offersThreadGrant(card: Pick<ApprovalCard, "approvers" | "requesterName">): boolean {
  return card.approvers.some((name) => name !== card.requesterName);
}

/** The labels of a pending approval card's buttons (plain text, no Markdown). */
export interface ApprovalButtonLabels {
  approve: string;
  deny: string;
  /** Opens the platform's form for a denial with a reason (decides nothing by itself). */
  denyWithReason: string;
  /** Opens the platform's form to edit the arguments and approve (decides nothing by itself). */
  edit: string;
  /** Decision `always`: "Always allow <tool> for <requester> in this thread". */
  always: string;
  /** Decision `alwaysThread`: "Always allow <tool> for everyone here (approvers)". */
  alwaysThread: string;
}

/**
 * The button labels of `card`, each at most `maxChars` characters (UTF-16 code units, which never
 * undercounts a platform that counts code points). When the tool and requester names do not fit, they
 * are shortened with `…` — the shorter name keeps up to half of the room, the longer one gets the rest —
 * and the fixed words are kept, so the label still says who is covered. Pure; never throws.
 */
export function approvalButtonLabels(
  card: Pick<ApprovalCard, "toolName" | "requesterName">,
  maxChars: number,
): ApprovalButtonLabels {
  // Parts are fixed words (strings) and names ({ name }) that may be shortened.
  const labelOf = (parts: (string | { name: string })[]) => {
    const fixed = parts.reduce((sum, part) => sum + (typeof part === "string" ? part.length : 0), 0);
    const names = parts.flatMap((part) => (typeof part === "string" ? [] : [part.name]));
    const shortened = shareRoom(names, Math.max(0, maxChars - fixed));
    const label = parts.map((part) => (typeof part === "string" ? part : (shortened.shift() ?? ""))).join("");
    return label.length <= maxChars ? label : clip(label, maxChars);
  };
  const tool = { name: card.toolName };
  return {
    approve: clip("Approve", maxChars),
    deny: clip("Deny", maxChars),
    denyWithReason: clip("Deny with reason…", maxChars),
    edit: clip("Edit and approve…", maxChars),
    always: labelOf(["Always allow ", tool, " for ", { name: requesterOf(card) }, " in this thread"]),
    alwaysThread: labelOf(["Always allow ", tool, " for everyone here (approvers)"]),
  };
}

/** Shortens `names` to share `room` characters: shortest first, each at most its fair share of what is left. */
function shareRoom(names: string[], room: number): string[] {
  const fitted = [...names];
  const order = names.map((_, index) => index).sort((a, b) => names[a]!.length - names[b]!.length);
  let left = room;
  order.forEach((index, position) => {
    const share = Math.floor(left / (order.length - position));
    fitted[index] = clip(names[index]!, share);
    left -= fitted[index]!.length;
  });
  return fitted;
}

/** `text` cut to `max` characters with a final `…`, never splitting a surrogate pair. */
function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  return max <= 0 ? "" : `${safeSlice(text, max - 1)}…`;
}

/**
 * The plain-text fallback of an approval card in the platform's `dialect`: the tool, its arguments in a
 * code block, who may decide and when it expires while pending, or the decision with who made it and when
 * — for "always", whom it covers ("for <requester>" or "for everyone" in this thread). Times are
 * {@link ChatDialect.timestamp}s (native ones render in the reader's time zone). `card.approvers` are
 * inserted verbatim (so platform mentions from {@link ChatDialect.mention} work); names of deciders are
 * escaped. Never throws.
 */
export function approvalCardText(card: ApprovalCard, dialect: ChatDialect): string {
  const text = (value: string) => dialect.escape(value);
  const bold = (value: string) => dialect.bold(value);
  const timestamp = (ms: number, style: "relative" | "absolute") => dialect.timestamp(ms, style);
  const tool = `\`${card.toolName.replaceAll("`", "'")}\``;
  const args = card.argumentsText.replaceAll("```", "`\u200b``");
  const lines = [
    `🔐 ${bold(card.state.kind === "pending" ? "Approval needed" : "Approval")} to run ${tool}`,
    `\`\`\`\n${dialect.escapeCode(args)}\n\`\`\``,
  ];
  const state = card.state;
  switch (state.kind) {
    case "pending": {
      const who = card.approvers.length > 0 ? `${card.approvers.join(", ")} can decide. ` : "";
      // expiresAt 0: the tool's card has no timeout.
      lines.push(
        card.expiresAt > 0
          ? `${who}Expires ${timestamp(card.expiresAt, "relative")}.`
          : `${who}No time limit.`,
      );
      if (state.waitingMessages > 0) {
        const plural = state.waitingMessages === 1 ? "message" : "messages";
        lines.push(`⏳ ${state.waitingMessages} ${plural} waiting for this decision.`);
      }
      break;
    }
    case "approved": {
      const by = `by ${text(state.by.name)}, ${timestamp(state.at, "absolute")}`;
      const scope = alwaysScope(state);
      const whom = scope === "thread" ? "everyone" : text(requesterOf(card));
      lines.push(
        scope
          ? `✅ ${bold("Always allowed")} ${tool} for ${whom} in this thread — ${by}`
          : `✅ ${bold("Approved")} ${by}`,
      );
      if (state.changes && state.changes.length > 0) {
        // Inline code keeps the values readable and unformatted; a backtick inside would end it.
        lines.push(`✏️ ${bold("Edited before approval")}:`);
        for (const change of state.changes) {
          const plain = change.replaceAll("`", "'");
          lines.push(`• \`${dialect.escapeCode(plain)}\``);
        }
      }
      break;
    }
    case "denied":
      lines.push(`❌ ${bold("Denied")} by ${text(state.by.name)}, ${timestamp(state.at, "absolute")}`);
      if (state.reason) lines.push(`Reason: ${text(state.reason)}`);
      break;
    case "expired":
      lines.push(`⌛ ${bold("Denied")}: approval timed out, ${timestamp(state.at, "absolute")}`);
      break;
    case "cancelled":
      lines.push(`🚫 ${bold("Cancelled")}: ${text(state.reason)}`);
      break;
  }
  return lines.join("\n");
}
