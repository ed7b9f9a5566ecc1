import type { RunOutcome } from "../types.js";
import { escapeMarkdown, shortText } from "./progress.js";

/** Longest error or reason text an outcome or failure line shows. */
export const NOTICE_CHARS = 300;

/**
 * The short Markdown line that says how a run ended, or `undefined` for `completed` (the answer speaks for
 * itself): `🛑 Stopped by Ada.`, `🛑 Stopped by Ada — <reason>`, `🛑 <reason>` (nobody named),
 * `⚠️ <budget reason>`, `⚠️ <failure message>`. Texts are shortened to one line and escaped; never a
 * stack trace.
 */
export function formatOutcomeLine(outcome: RunOutcome): string | undefined {
  switch (outcome.kind) {
    case "completed":
      return undefined;
    case "stopped": {
      const reason = outcome.reason === undefined ? "" : clean(outcome.reason);
      const by = outcome.by === undefined ? "" : escapeMarkdown(outcome.by.name);
      if (by && reason) return `🛑 Stopped by ${by} — ${reason}`;
      if (by) return `🛑 Stopped by ${by}.`;
      return reason ? `🛑 ${reason}` : "🛑 Stopped.";
    }
    case "budget":
      return `⚠️ ${clean(outcome.reason) || "This run reached its budget, so it was stopped."}`;
    case "failed":
      return formatFailureLine(outcome.message);
  }
}

/**
 * The line for a failed model call or run: `⚠️ <first line of the message>`, with a generic sentence
 * when the message is empty.
 */
export function formatFailureLine(message: string | undefined): string {
  return `⚠️ ${clean(message ?? "") || "Something went wrong."}`;
}

function clean(text: string): string {
  return escapeMarkdown(shortText(text, NOTICE_CHARS));
}
