import type { ApprovalFormKind, ChatInbound, ChatOutbound, ChatUser, ThreadRef } from "../chat/index.js";
import type { SlackApi } from "./api.js";
import { SLACK_APPROVAL_IDS } from "./approval-blocks.js";
import { isDirectChannel, placeAllowed } from "./events.js";
import type { SlackAccess } from "./options.js";

/** The `callback_id` of the deny/edit modals (Bolt routes their `view_submission` by it). */
export const APPROVAL_FORM_CALLBACK_ID = "threadline:approval-form";

export type { ApprovalFormKind };

/** The block (and its input's action) whose value a submission carries. */
const INPUT_BLOCK = "threadline-form-input";
const INPUT_ACTION = "value";

/**
 * Slack's limits on a modal (https://docs.slack.dev/reference/views/modal-views): `title`, `submit` and
 * `close` ≤ 24 characters, `private_metadata` ≤ 3000, `callback_id` ≤ 255; a `plain_text_input`'s
 * `max_length` and `initial_value` ≤ 3000
 * (https://docs.slack.dev/reference/block-kit/block-elements/plain-text-input-element).
 */
export const SLACK_MODAL_LIMITS = { title: 24, metadata: 3000, callbackId: 255, input: 3000 } as const;

/** What a modal carries in `private_metadata`: re-checked server-side on submission. */
export interface ApprovalFormMetadata {
  form: ApprovalFormKind;
  approvalId: string;
  team: string;
  channel: string;
  thread: string;
}

/** Parses a card's "Deny with reason…" / "Edit and approve…" action id; `undefined` for anything else. */
export const parseApprovalFormAction = SLACK_APPROVAL_IDS.parseForm;

/** The modal of a form, prefilled (edit) with the call's arguments as JSON. */
export function approvalModal(
  meta: ApprovalFormMetadata,
  toolName: string,
  argumentsJson: string,
): Record<string, unknown> {
  const edit = meta.form === "edit";
  const tool = toolName.length > 60 ? `${toolName.slice(0, 59)}…` : toolName;
  return {
    type: "modal",
    callback_id: APPROVAL_FORM_CALLBACK_ID,
    private_metadata: JSON.stringify(meta),
    title: { type: "plain_text", text: edit ? "Edit and approve" : "Deny with a reason" },
    submit: { type: "plain_text", text: edit ? "Approve" : "Deny" },
    close: { type: "plain_text", text: "Cancel" },
    blocks: [
      {
        type: "section",
        text: {
          type: "mrkdwn",
          text: edit
            ? `Correct the arguments of \`${tool}\` (JSON). They are checked against the tool's schema; the call runs with them.`
            : `Why not run \`${tool}\`? The model reads your reason.`,
        },
      },
      {
        type: "input",
        block_id: INPUT_BLOCK,
        label: { type: "plain_text", text: edit ? "Arguments (JSON)" : "Reason" },
        element: {
          type: "plain_text_input",
          action_id: INPUT_ACTION,
          multiline: true,
          max_length: edit ? SLACK_MODAL_LIMITS.input : 500,
          ...(edit ? { initial_value: argumentsJson } : {}),
        },
      },
    ],
  };
}

/** Parses a submission's `private_metadata`; `undefined` when it is not ours. */
export function parseFormMetadata(text: unknown): ApprovalFormMetadata | undefined {
  if (typeof text !== "string") return undefined;
  try {
    const meta = JSON.parse(text) as Partial<ApprovalFormMetadata>;
    const strings = [meta.approvalId, meta.team, meta.channel, meta.thread].every(
      (value) => typeof value === "string" && value !== "",
    );
    return strings && (meta.form === "reason" || meta.form === "edit")
      ? (meta as ApprovalFormMetadata)
      : undefined;
  } catch {
    return undefined;
  }
}

/** `view_submission` (https://docs.slack.dev/reference/interaction-payloads/view-interactions-payload). */
export interface ViewSubmissionBody {
  user?: { id?: string };
  team?: { id?: string } | null;
  view?: {
    private_metadata?: string;
    state?: { values?: Record<string, Record<string, { value?: string | null }>> };
  };
}

/** What a submission is answered (the `ack` payload): close the modal, or keep it open with an error. */
export type ViewAck = undefined | { response_action: "errors"; errors: Record<string, string> };

/** What the form handling needs from the Slack connection. */
export interface ApprovalModalDeps {
  api: SlackApi;
  outbound: ChatOutbound;
  access: SlackAccess;
  user(team: string, userId: string): Promise<ChatUser>;
}

/**
 * Opens a card's deny/edit modal: the gateway says first whether the clicker may decide (else they get the
 * private notice, as for a button), then `views.open` exchanges the click's `trigger_id` (valid 3 s) for
 * the modal. Arguments too long for Slack's input are not offered for editing. Never throws for Slack
 * failures it can explain; rejects on others (the caller logs).
 */
export async function openApprovalForm(
  deps: ApprovalModalDeps,
  inbound: ChatInbound,
  click: { thread: ThreadRef; userId: string; triggerId: string; form: ApprovalFormKind; approvalId: string },
): Promise<void> {
  const { thread, userId } = click;
  const form = inbound.approvalForm
    ? await inbound.approvalForm(thread, click.approvalId, await deps.user(thread.workspace, userId))
    : { kind: "notice" as const, text: "This approval can't be changed here." };
  if (form.kind === "notice") {
    await deps.outbound.notify(thread, userId, form.text);
    return;
  }
  if (click.form === "edit" && form.argumentsJson.length > SLACK_MODAL_LIMITS.input) {
    await deps.outbound.notify(
      thread,
      userId,
      `The arguments of \`${form.toolName}\` are too long to edit in Slack (over ${SLACK_MODAL_LIMITS.input} characters); use Approve or Deny.`,
    );
    return;
  }
  const meta: ApprovalFormMetadata = {
    form: click.form,
    approvalId: click.approvalId,
    team: thread.workspace,
    channel: thread.channel,
    thread: thread.thread,
  };
  try {
    await deps.api.client.views.open({
      trigger_id: click.triggerId,
      view: approvalModal(meta, form.toolName, form.argumentsJson) as never,
    });
  } catch (err) {
    // The click's trigger is valid for 3 s only; a slow answer (or a refused view) leaves nothing open.
    await deps.outbound.notify(thread, userId, FORM_NOT_OPENED);
    throw err;
  }
}

/** What the clicker is told when Slack did not open the form. */
export const FORM_NOT_OPENED = "The form could not be opened in time; please click the button again.";

/** What a submission whose metadata is not ours (forged, or from another workspace) is answered in the modal. */
export const FORM_NOT_VALID =
  "This form is no longer valid: close it and use the buttons on the approval card.";

/**
 * Handles a deny/edit modal's `view_submission`: the approval and thread come from `private_metadata` and
 * are checked again by the gateway (who may decide, still pending, this thread's record), the team from
 * Slack's own payload. An edit that does not validate keeps the modal open with the error under the input
 * (`response_action: "errors"`); a refused submission closes it and tells the user privately in the
 * thread. Resolves with the `ack` payload; never throws (a storage failure is shown in the modal).
 */
export async function submitApprovalForm(
  deps: ApprovalModalDeps,
  inbound: ChatInbound,
  body: ViewSubmissionBody,
): Promise<ViewAck> {
  const meta = parseFormMetadata(body.view?.private_metadata);
  const userId = body.user?.id;
  const team = body.team?.id ?? "";
  if (!userId) return undefined;
  if (
    !meta ||
    meta.team !== team ||
    !placeAllowed(team, meta.channel, isDirectChannel(meta.channel), deps.access)
  ) {
    return inputError(FORM_NOT_VALID);
  }
  const thread: ThreadRef = {
    platform: "slack",
    workspace: team,
    channel: meta.channel,
    thread: meta.thread,
  };
  const text = body.view?.state?.values?.[INPUT_BLOCK]?.[INPUT_ACTION]?.value ?? "";
  try {
    const reply = await inbound.button({
      thread,
      approvalId: meta.approvalId,
      user: await deps.user(team, userId),
      ...(meta.form === "edit"
        ? { decision: "approve" as const, editedArguments: text }
        : { decision: "deny" as const, reason: text }),
    });
    if (reply.kind === "invalid") return inputError(reply.text);
    if (reply.kind === "notice") await deps.outbound.notify(thread, userId, reply.text);
    return undefined;
  } catch {
    return inputError("Couldn't save your decision right now; please submit again in a moment.");
  }
}

/** Slack shows an `errors` entry under the input block; keep it readable (long schema errors are cut). */
function inputError(text: string): ViewAck {
  const short = text.length > 1500 ? `${text.slice(0, 1499)}…` : text;
  return { response_action: "errors", errors: { [INPUT_BLOCK]: short } };
}
