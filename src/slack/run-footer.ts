/**
 * The run footer ("2 turns · 1.7k tokens · $0.004") as Slack shows it: a Block Kit `context` block — small,
 * grey, secondary text under the answer (https://docs.slack.dev/reference/block-kit/blocks/context-block:
 * up to 10 image or text elements; a mrkdwn text object holds at most 3000 characters,
 * https://docs.slack.dev/reference/block-kit/composition-objects/text-object) — instead of an italic last
 * line that reads like part of the answer. The message's `text` keeps the footer as the fallback that
 * notifications and screen readers show.
 */

/**
 * The renderer's footer line in mrkdwn, as a message's last line: `_3 turns · 2 tool calls · $0.01_` (the
 * dialect converter may have put zero-width spaces around the underscores).
 */
const FOOTER_LINE = /(?:^|\n)\u200b?_(\d+ turns?(?: · [^_\n]+)?)_\u200b?$/u;

/** Most characters of a context block's mrkdwn element. */
export const CONTEXT_TEXT_MAX = 3000;

/** A message's text split into what it says and its run footer (when its last line is one). */
export interface FooterSplit {
  body: string;
  footer: string | undefined;
}

/** Splits off the run footer line; `footer` undefined (and `body` = `text`) when there is none. */
export function splitFooter(text: string): FooterSplit {
  const match = FOOTER_LINE.exec(text);
  if (!match?.[1]) return { body: text, footer: undefined };
  return { body: text.slice(0, match.index).replace(/\n+$/u, ""), footer: match[1] };
}

/** The footer's context block. */
export function footerBlock(footer: string): Record<string, unknown> {
  return {
    type: "context",
    elements: [{ type: "mrkdwn", text: [...footer].slice(0, CONTEXT_TEXT_MAX).join("") }],
  };
}
