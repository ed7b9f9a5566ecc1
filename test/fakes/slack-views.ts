import type { FakeSlackStore } from "./slack-store.js";
import type { ApiReply, WebApiContext } from "./slack-web-api.js";

/**
 * Modals in the fake Slack: `views.open` and the `view_submission` payload a user's Submit sends.
 *
 * - A `trigger_id` comes with an interaction (a button click) and is exchanged once; "Triggers expire in
 *   three seconds" (https://docs.slack.dev/interactivity/handling-user-interaction#modal_responses): an
 *   unknown id answers `invalid_trigger_id`, a second use `exchanged_trigger_id`, a late one
 *   `expired_trigger_id` (the errors of https://docs.slack.dev/reference/methods/views.open).
 * - The view (https://docs.slack.dev/reference/views/modal-views): `type` "modal"; `title` a plain_text
 *   of at most 24 characters; `blocks` 1 to 100; `submit` (≤ 24) required when an `input` block is
 *   present; `close` ≤ 24; `private_metadata` ≤ 3000; `callback_id` ≤ 255. A `plain_text_input`'s
 *   `max_length` ≤ 3000 and its `initial_value` within it
 *   (https://docs.slack.dev/reference/block-kit/block-elements/plain-text-input-element). A broken view
 *   answers `invalid_arguments` with the reasons in `response_metadata.messages`.
 */
export const TRIGGER_TTL_MS = 3000;

/** A modal the fake shows to a user. */
export interface FakeView {
  id: string;
  userId: string;
  team: string;
  view: Record<string, unknown>;
}

interface ViewsState {
  triggers: Map<string, { userId: string; issuedAt: number; used: boolean }>;
  views: Map<string, FakeView>;
  seq: number;
}

const states = new WeakMap<FakeSlackStore, ViewsState>();

function stateOf(store: FakeSlackStore): ViewsState {
  let state = states.get(store);
  if (!state) {
    state = { triggers: new Map(), views: new Map(), seq: 0 };
    states.set(store, state);
  }
  return state;
}

/** A new trigger id for an interaction of `userId` (Slack's `"<n>.<n>.<hex>"` shape). */
export function issueTrigger(store: FakeSlackStore, userId: string): string {
  const state = stateOf(store);
  const id = `${++state.seq}.${Date.now()}.${Math.random().toString(16).slice(2, 10)}`;
  state.triggers.set(id, { userId, issuedAt: Date.now(), used: false });
  return id;
}

/** Every modal opened so far, oldest first. */
export function openedViews(store: FakeSlackStore): FakeView[] {
  return [...stateOf(store).views.values()];
}

/** Ages every trigger issued so far by `ms` (a test that shows a late `views.open` is refused). */
export function ageTriggers(store: FakeSlackStore, ms: number): void {
  for (const trigger of stateOf(store).triggers.values()) trigger.issuedAt -= ms;
}

const plainTextErrors = (errors: string[], where: string, value: unknown, max: number, required: boolean) => {
  if (value === undefined) {
    if (required) errors.push(`${where}: required`);
    return;
  }
  const text = value as { type?: unknown; text?: unknown };
  if (text.type !== "plain_text" || typeof text.text !== "string")
    errors.push(`${where}: must be plain_text`);
  else if ([...text.text].length > max) errors.push(`${where}: must be at most ${max} characters`);
};

/** Why a modal view is refused (empty when it is fine). */
export function viewErrors(view: Record<string, unknown>): string[] {
  const errors: string[] = [];
  if (view.type !== "modal") errors.push("view.type: must be modal");
  plainTextErrors(errors, "view.title", view.title, 24, true);
  plainTextErrors(errors, "view.close", view.close, 24, false);
  const blocks = Array.isArray(view.blocks) ? (view.blocks as Record<string, unknown>[]) : undefined;
  if (!blocks || blocks.length === 0 || blocks.length > 100) errors.push("view.blocks: 1 to 100 blocks");
  const hasInput = (blocks ?? []).some((block) => block.type === "input");
  plainTextErrors(errors, "view.submit", view.submit, 24, hasInput);
  if (typeof view.callback_id === "string" && view.callback_id.length > 255) {
    errors.push("view.callback_id: must be at most 255 characters");
  }
  if (typeof view.private_metadata === "string" && view.private_metadata.length > 3000) {
    errors.push("view.private_metadata: must be at most 3000 characters");
  }
  (blocks ?? []).forEach((block, index) => {
    if (block.type !== "input") return;
    const element = (block.element ?? {}) as Record<string, unknown>;
    if (typeof block.block_id !== "string") errors.push(`view.blocks/${index}/block_id: required`);
    if (element.type !== "plain_text_input") return;
    const max = typeof element.max_length === "number" ? element.max_length : 3000;
    if (max > 3000) errors.push(`view.blocks/${index}/element/max_length: at most 3000`);
    if (typeof element.initial_value === "string" && [...element.initial_value].length > max) {
      errors.push(`view.blocks/${index}/element/initial_value: longer than max_length`);
    }
  });
  return errors;
}

/** `views.open`. */
export function viewsOpen(args: Record<string, unknown>, ctx: WebApiContext): ApiReply {
  const state = stateOf(ctx.store);
  const triggerId = typeof args.trigger_id === "string" ? args.trigger_id : "";
  if (triggerId === "") return { ok: false, error: "invalid_arguments" };
  const trigger = state.triggers.get(triggerId);
  if (!trigger) return { ok: false, error: "invalid_trigger_id" };
  if (trigger.used) return { ok: false, error: "exchanged_trigger_id" };
  if (Date.now() - trigger.issuedAt > TRIGGER_TTL_MS) return { ok: false, error: "expired_trigger_id" };
  let view: Record<string, unknown>;
  try {
    view = (typeof args.view === "string" ? JSON.parse(args.view) : args.view) as Record<string, unknown>;
  } catch {
    return { ok: false, error: "invalid_arguments" };
  }
  const errors = view && typeof view === "object" ? viewErrors(view) : ["view: required"];
  if (errors.length > 0) {
    return { ok: false, error: "invalid_arguments", response_metadata: { messages: errors } } as ApiReply;
  }
  trigger.used = true;
  const id = `V${String(++state.seq).padStart(8, "0")}`;
  const shown: FakeView = { id, userId: trigger.userId, team: ctx.config.teamId, view };
  state.views.set(id, shown);
  return {
    ok: true,
    view: {
      ...view,
      id,
      team_id: ctx.config.teamId,
      state: { values: {} },
      hash: `${Date.now()}.x`,
      root_view_id: id,
    },
  };
}

/**
 * The `view_submission` payload of a user submitting `viewId` with `values` typed into its inputs (by
 * block id, then action id), as https://docs.slack.dev/reference/interaction-payloads/view-interactions-payload
 * describes it.
 * @throws Error when no such modal is open (there would be nothing to submit).
 */
export function viewSubmission(
  store: FakeSlackStore,
  viewId: string,
  values: Record<string, Record<string, string>>,
): Record<string, unknown> {
  const shown = stateOf(store).views.get(viewId);
  if (!shown) throw new Error(`fake Slack: no open view ${viewId}`);
  const stateValues = Object.fromEntries(
    Object.entries(values).map(([block, actions]) => [
      block,
      Object.fromEntries(
        Object.entries(actions).map(([action, value]) => [action, { type: "plain_text_input", value }]),
      ),
    ]),
  );
  return {
    type: "view_submission",
    team: { id: shown.team, domain: "fake" },
    user: {
      id: shown.userId,
      username: shown.userId.toLowerCase(),
      name: shown.userId.toLowerCase(),
      team_id: shown.team,
    },
    api_app_id: "A0FAKEAPP",
    token: "verification-token",
    trigger_id: issueTrigger(store, shown.userId),
    view: {
      ...shown.view,
      id: shown.id,
      team_id: shown.team,
      state: { values: stateValues },
      hash: `${Date.now()}.x`,
      root_view_id: shown.id,
      previous_view_id: null,
      app_id: "A0FAKEAPP",
      bot_id: "B0FAKE",
    },
    response_urls: [],
  };
}

/** Closes a modal (after a submission the app acknowledged without errors). */
export function closeView(store: FakeSlackStore, viewId: string): void {
  stateOf(store).views.delete(viewId);
}
