/**
 * 👍 / 👎 under a finished answer: Slack's `feedback_buttons` element in a `context_actions` block
 * (https://docs.slack.dev/reference/block-kit/blocks/context-actions-block — "An array of feedback
 * buttons elements and icon button elements. Maximum number of items is 5"; `block_id` ≤ 255 characters,
 * unique per message). Attached with `chat.stopStream`'s `blocks` ("Block formatted elements will be
 * appended to the end of the message", https://docs.slack.dev/tools/node-slack-sdk/reference/web-api/type-aliases/ChatStopStreamArguments)
 * or, for a reply that was posted and edited, with the final `chat.update`. A click arrives as a
 * `block_actions` payload whose action is `{ type: "feedback_buttons", action_id, block_id, value }`
 * (https://docs.slack.dev/tools/bolt-js/reference/interfaces/FeedbackButtonsAction).
 */

/** The action id of Threadline's feedback buttons (bolt routes `threadline:` actions to the gateway). */
export const FEEDBACK_ACTION_ID = "threadline:feedback";

/** What a click says. */
export type FeedbackValue = "positive" | "negative";

const BLOCK_PREFIX = "threadline-feedback";

/**
 * The feedback block for the answer of run `runId` (when known) in message `messageTs`. The run id travels
 * in the `block_id`, so the click names the run without any lookup.
 */
export function feedbackBlock(runId: string | undefined, messageTs: string): Record<string, unknown> {
  const blockId = `${BLOCK_PREFIX}:${messageTs}${runId ? `:${runId}` : ""}`;
  return {
    type: "context_actions",
    block_id: blockId.slice(0, 255),
    elements: [
      {
        type: "feedback_buttons",
        action_id: FEEDBACK_ACTION_ID,
        positive_button: {
          text: { type: "plain_text", text: "👍" },
          accessibility_label: "This answer was helpful",
          value: "positive",
        },
        negative_button: {
          text: { type: "plain_text", text: "👎" },
          accessibility_label: "This answer was not helpful",
          value: "negative",
        },
      },
    ],
  };
}

/** A parsed feedback click: the value and the run named by the block, if any. */
export interface FeedbackAction {
  value: FeedbackValue;
  runId: string | undefined;
}

/** Reads a feedback click's `value` and `block_id`; `undefined` for anything else. */
export function parseFeedbackAction(action: {
  value?: unknown;
  block_id?: unknown;
}): FeedbackAction | undefined {
  if (action.value !== "positive" && action.value !== "negative") return undefined;
  const blockId = typeof action.block_id === "string" ? action.block_id : "";
  if (!blockId.startsWith(`${BLOCK_PREFIX}:`)) return { value: action.value, runId: undefined };
  const [, , runId] = blockId.split(":");
  return { value: action.value, runId: runId || undefined };
}
