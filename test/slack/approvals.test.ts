import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { threadId } from "../../src/chat/index.js";
import { threadKeys } from "../../src/runs/keys.js";
import { textReply, toolCallReply } from "../fakes/openai-server.js";
import type { FakeMessage } from "../fakes/slack-server.js";
import { ageTriggers, openedViews } from "../fakes/slack-views.js";
import { ALICE, BOB, CAROL, type ModelStep, SlackE2E } from "./e2e-harness.js";

let e2e: SlackE2E;
beforeAll(async () => {
  e2e = await SlackE2E.start({
    env: { THREADLINE_APPROVERS: CAROL, THREADLINE_APPROVAL_TIMEOUT_MS: "5000" },
  });
}, 60_000);
afterAll(async () => {
  await e2e?.close();
});

const deploy = (id: string) => toolCallReply([{ id, name: "deploy", arguments: { service: "api" } }]);

/** The tool result the model got for a call, from the request after the card. */
function toolResult(tag: string, index: number): string {
  const body = e2e.requests(tag)[index]?.body as
    | { messages?: { role: string; content: unknown }[] }
    | undefined;
  return String(body?.messages?.find((message) => message.role === "tool")?.content ?? "");
}

function card(root: FakeMessage): Promise<FakeMessage> {
  return e2e.slack.store.waitFor("an approval card", () =>
    e2e.botMessages(root).find((m) => m.blocks !== undefined),
  );
}

function labels(message: FakeMessage): string[] {
  return (message.blocks ?? []).flatMap((block) =>
    ((block as { elements?: { text?: { text?: string } }[] }).elements ?? []).flatMap((element) =>
      element.text?.text !== undefined && (block as { type?: string }).type === "actions"
        ? [element.text.text]
        : [],
    ),
  );
}

function hasButtons(message: FakeMessage): boolean {
  return (message.blocks ?? []).some((block) => (block as { type?: string }).type === "actions");
}

/** A new thread: Alice says `text`, the model follows `steps`; resolves once the first card shows. */
async function ask(text: string, ...steps: ModelStep[]) {
  const tag = e2e.tag(...steps);
  const mention = e2e.mention(tag, text);
  return { tag, mention, pending: await card(mention) };
}

/** The first private notice to `user` that `matches`. */
function noticeTo(
  user: string,
  matches: (text: string, threadTs: string | undefined) => boolean = () => true,
) {
  return e2e.slack.store.waitFor(`a notice to ${user}`, () =>
    e2e.slack.store.ephemerals.find((entry) => entry.user === user && matches(entry.text, entry.threadTs)),
  );
}

async function decided(message: FakeMessage, text: string): Promise<FakeMessage> {
  return e2e.slack.store.waitFor(`card shows "${text}"`, () =>
    message.text.includes(text) && !hasButtons(message) ? message : undefined,
  );
}

describe("approval cards on Slack", () => {
  it("shows the tool, its arguments, who may decide and the buttons; Approve runs the tool", async () => {
    const { tag, mention, pending } = await ask("deploy the api", deploy("d1"), textReply("Deployed."));
    expect(pending.text).toContain("`deploy`");
    expect(pending.text).toContain("service: api");
    expect(pending.text).toContain("Alice, <@U0CAROL> can decide");
    const ids = (pending.blocks ?? []).flatMap((block) =>
      ((block as { elements?: { action_id?: string }[] }).elements ?? []).map((element) => element.action_id),
    );
    expect(ids.filter((id) => id?.startsWith("threadline:")).map((id) => id?.split(":")[1])).toEqual([
      "approve",
      "deny",
      "always",
      "edit",
      "reason",
      "alwaysThread",
    ]);
    expect(labels(pending)).toEqual([
      "Approve",
      "Deny",
      "Always allow deploy for Alice in this thread",
      "Edit and approve…",
      "Deny with reason…",
      "Always allow deploy for everyone here (approvers)",
    ]);
    const click = e2e.slack.click(ALICE, pending, "threadline:approve:");
    await click.ack;
    await decided(pending, "Approved* by Alice");
    await e2e.waitForRunsEnded(mention);
    expect(toolResult(tag, 1)).toBe("deployed api");
    expect(e2e.slack.store.ephemerals.filter((notice) => notice.user === ALICE)).toEqual([]);
  });

  it("tells a user who may not decide so privately and changes nothing; an approver's Deny reaches the model", async () => {
    const { tag, mention, pending } = await ask("deploy the api", deploy("d2"), textReply("Not deployed."));
    await e2e.slack.click(BOB, pending, "threadline:approve:").ack;
    const notice = await noticeTo(BOB);
    expect(notice.text).toContain("You can't approve this");
    expect(hasButtons(pending)).toBe(true);
    expect(pending.edits).toBe(0);
    e2e.slack.click(CAROL, pending, "threadline:deny:");
    await decided(pending, "Denied* by Carol");
    await e2e.waitForRunsEnded(mention);
    expect(toolResult(tag, 1)).toContain("denied by Carol");
  });

  it("Always allow lets the requester's later calls of the tool in this thread run without a card", async () => {
    const { tag, mention, pending } = await ask(
      "deploy",
      deploy("d3"),
      textReply("Deployed once."),
      deploy("d4"),
      textReply("Deployed twice."),
    );
    e2e.slack.click(ALICE, pending, "threadline:always:");
    await decided(pending, "Always allowed* `deploy` for Alice in this thread — by Alice");
    await e2e.waitForRunsEnded(mention);
    e2e.reply(mention, "again please");
    await e2e.waitForRunsEnded(mention, 2);
    expect(toolResult(tag, 3)).toBe("deployed api");
    expect(e2e.botMessages(mention).filter((message) => message.blocks !== undefined)).toHaveLength(1);
  });

  it("Always allow covers only the requester: someone else's later call in the thread gets a card", async () => {
    const {
      tag,
      mention,
      pending: first,
    } = await ask(
      "deploy",
      deploy("d9"),
      textReply("Deployed for Alice."),
      deploy("d10"),
      textReply("Deployed for Bob."),
    );
    e2e.slack.click(ALICE, first, "threadline:always:");
    await decided(first, "for Alice in this thread");
    await e2e.waitForRunsEnded(mention);
    e2e.reply(mention, "deploy again please", BOB);
    const second = await e2e.slack.store.waitFor(
      "a second card",
      () => e2e.botMessages(mention).filter((message) => message.blocks !== undefined)[1],
    );
    expect(labels(second)).toContain("Always allow deploy for Bob in this thread");
    e2e.slack.click(CAROL, second, "threadline:approve:");
    await decided(second, "Approved* by Carol");
    await e2e.waitForRunsEnded(mention, 2);
    expect(toolResult(tag, 3)).toBe("deployed api");
  });

  it("an approver's Always allow for everyone lets anyone's later calls run; the requester may not grant it", async () => {
    const { tag, mention, pending } = await ask(
      "deploy",
      deploy("d11"),
      textReply("Deployed once."),
      deploy("d12"),
      textReply("Deployed for Bob."),
    );
    await e2e.slack.click(ALICE, pending, "threadline:alwaysThread:").ack;
    const notice = await noticeTo(ALICE, (_, threadTs) => threadTs === mention.ts);
    expect(notice.text).toContain("can't");
    expect(hasButtons(pending)).toBe(true);
    expect(pending.edits).toBe(0);
    e2e.slack.click(CAROL, pending, "threadline:alwaysThread:");
    await decided(pending, "Always allowed* `deploy` for everyone in this thread — by Carol");
    await e2e.waitForRunsEnded(mention);
    e2e.reply(mention, "deploy again please", BOB);
    await e2e.waitForRunsEnded(mention, 2);
    expect(toolResult(tag, 3)).toBe("deployed api");
    expect(e2e.botMessages(mention).filter((message) => message.blocks !== undefined)).toHaveLength(1);
  });

  it("a double click decides once; the second click is told it was already decided", async () => {
    const { tag, mention, pending } = await ask("deploy", deploy("d5"), textReply("Deployed."));
    await Promise.all([
      e2e.slack.click(ALICE, pending, "threadline:approve:").ack,
      e2e.slack.click(ALICE, pending, "threadline:approve:").ack,
    ]);
    await decided(pending, "Approved* by Alice");
    const notice = await noticeTo(ALICE, (_, threadTs) => threadTs === mention.ts);
    expect(notice.text).toContain("already decided by Alice");
    await e2e.waitForRunsEnded(mention);
    expect(e2e.requests(tag)).toHaveLength(2);
    expect(toolResult(tag, 1)).toBe("deployed api");
  });

  it("no decision before the timeout denies with 'approval timed out' and the card says so", async () => {
    const { tag, mention, pending } = await ask("deploy", deploy("d6"), textReply("Gave up."));
    await decided(pending, "approval timed out");
    await e2e.waitForRunsEnded(mention);
    expect(toolResult(tag, 1)).toContain("approval timed out");
  });
});

describe("deny with a reason and edit and approve (Slack modals)", () => {
  const INPUT = "threadline-form-input";
  const approvalIdOf = (message: FakeMessage) =>
    String(
      (message.blocks ?? [])
        .flatMap((block) =>
          ((block as { elements?: { value?: string }[] }).elements ?? []).map((e) => e.value),
        )
        .find((value) => value !== undefined),
    );
  /** The approval's record in Redis (the id is read from the card's buttons while it has them). */
  const ids = new WeakMap<FakeMessage, string>();
  const record = (root: FakeMessage, message: FakeMessage) => {
    if (!ids.has(message)) ids.set(message, approvalIdOf(message));
    const thread = {
      platform: "slack" as const,
      workspace: e2e.slack.config.teamId,
      channel: root.channel,
      thread: root.ts,
    };
    return e2e.redis.hgetall(threadKeys(e2e.prefix, threadId(thread)).approval(ids.get(message)!));
  };
  const viewFor = (user: string, before: number) =>
    e2e.slack.store.waitFor(`a modal for ${user}`, () =>
      openedViews(e2e.slack.store)
        .slice(before)
        .find((view) => view.userId === user),
    );

  /** Alice's card in a new thread, checked pending in Redis, and how many modals were open before it. */
  async function pendingCard(call: ModelStep, answer: ModelStep) {
    const { tag, mention, pending } = await ask("deploy the api", call, answer);
    expect((await record(mention, pending)).status).toBe("pending");
    return { tag, mention, pending, before: openedViews(e2e.slack.store).length };
  }
  /** `user` clicks the card's `button`; resolves with the modal opened for them. */
  async function openForm(user: string, pending: FakeMessage, button: string, before: number) {
    await e2e.slack.click(user, pending, `threadline:${button}:`).ack;
    return viewFor(user, before);
  }

  it("Deny with reason… opens a modal; its submission denies with the reason, which the model reads", async () => {
    const { tag, mention, pending, before } = await pendingCard(deploy("m1"), textReply("Not deployed."));
    const shown = await openForm(ALICE, pending, "reason", before);
    expect(shown.view).toMatchObject({
      type: "modal",
      callback_id: "threadline:approval-form",
      title: { type: "plain_text", text: "Deny with a reason" },
      submit: { type: "plain_text", text: "Deny" },
    });
    expect(JSON.parse(String(shown.view.private_metadata))).toMatchObject({
      form: "reason",
      thread: mention.ts,
    });
    expect(pending.edits).toBe(0); // opening the form decides nothing

    const submitted = e2e.slack.submitView(shown.id, { [INPUT]: { value: "wrong cluster, use staging" } });
    await submitted.ack;
    expect(submitted.response).toBeUndefined(); // the modal closes
    await decided(pending, "Denied* by Alice");
    expect(pending.text).toContain("Reason: wrong cluster, use staging");
    expect(await record(mention, pending)).toMatchObject({
      status: "denied",
      reason: "wrong cluster, use staging",
    });
    // The run's answer (the status line's clearing may be held back by the fake's per-minute budget).
    await e2e.waitForText(mention, "Not deployed.");
    expect(toolResult(tag, 1)).toBe("Tool call denied by Alice: wrong cluster, use staging");
    expect(await record(mention, pending)).toMatchObject({
      status: "denied",
      reason: "wrong cluster, use staging",
    });
  });

  it("someone who may not decide gets no modal but a private notice; a form whose card was decided meanwhile changes nothing", async () => {
    const { tag, mention, pending, before } = await pendingCard(deploy("m2"), textReply("Deployed."));
    await e2e.slack.click(BOB, pending, "threadline:edit:").ack;
    const notice = await noticeTo(BOB, (text) => text.includes("You can't approve this"));
    expect(notice.text).toContain("only the person who asked and the configured approvers can");
    // Carol (an approver) opens the reason form, then Alice approves before Carol submits.
    const shown = await openForm(CAROL, pending, "reason", before);
    expect(
      openedViews(e2e.slack.store)
        .slice(before)
        .map((view) => view.userId),
    ).toEqual([CAROL]);
    await e2e.slack.click(ALICE, pending, "threadline:approve:").ack;
    await decided(pending, "Approved* by Alice");
    await e2e.slack.submitView(shown.id, { [INPUT]: { value: "too late" } }).ack;
    const late = await noticeTo(CAROL);
    expect(late.text).toBe("This was already decided by Alice (approved).");
    expect((await record(mention, pending)).reason).toBeUndefined();
    // The run's answer (the status line's clearing may be held back by the fake's per-minute budget).
    await e2e.waitForText(mention, "Deployed.");
    expect(toolResult(tag, 1)).toBe("deployed api");
  });

  it("Edit and approve…: an invalid edit is shown in the modal and decides nothing; a valid one runs with the edited arguments", async () => {
    const { tag, mention, pending, before } = await pendingCard(deploy("m3"), textReply("Deployed web."));
    const shown = await openForm(CAROL, pending, "edit", before);
    const input = (shown.view.blocks as { type: string; element?: Record<string, unknown> }[]).find(
      (block) => block.type === "input",
    );
    expect(input?.element).toMatchObject({
      type: "plain_text_input",
      initial_value: '{\n  "service": "api"\n}',
    });

    const invalid = e2e.slack.submitView(shown.id, { [INPUT]: { value: '{"service": ["web"]}' } });
    await invalid.ack;
    expect(invalid.response).toEqual({
      response_action: "errors",
      errors: { [INPUT]: expect.stringContaining('Validation failed for tool "deploy":\n  - service:') },
    });
    expect(pending.edits).toBe(0);
    expect((await record(mention, pending)).status).toBe("pending");

    const valid = e2e.slack.submitView(shown.id, { [INPUT]: { value: '{"service": "web"}' } });
    await valid.ack;
    expect(valid.response).toBeUndefined();
    await decided(pending, "Approved* by Carol");
    expect(pending.text).toContain("✏️ *Edited before approval*:");
    expect(pending.text).toContain('`service: "api" → "web"`');
    expect(await record(mention, pending)).toMatchObject({
      status: "approved",
      editedArguments: '{"service":"web"}',
    });
    // The run's answer (the status line's clearing may be held back by the fake's per-minute budget).
    await e2e.waitForText(mention, "Deployed web.");
    const next = e2e.requests(tag)[1]?.body as {
      messages: { role: string; content: unknown; tool_calls?: { function: { arguments: string } }[] }[];
    };
    // The model's own call is kept as it was; the result tells it what actually ran.
    const call = next.messages.find((message) => message.role === "assistant");
    expect(JSON.parse(call?.tool_calls?.[0]?.function.arguments ?? "{}")).toEqual({ service: "api" });
    expect(toolResult(tag, 1)).toContain("Note: Carol edited the arguments before approving");
    expect(toolResult(tag, 1)).toContain('{"service":"web"}');
    expect(toolResult(tag, 1)).toContain("deployed web");
    expect(await record(mention, pending)).toMatchObject({
      status: "approved",
      editedArguments: '{"service":"web"}',
    });
  });

  it("a forged or outdated submission decides nothing: unreadable metadata is refused in the modal, another thread's approval is not found", async () => {
    const { mention, pending, before } = await pendingCard(deploy("m5"), textReply("Not deployed."));
    const shown = await openForm(ALICE, pending, "reason", before);
    const genuine = JSON.parse(String(shown.view.private_metadata)) as Record<string, string>;
    // A payload whose private_metadata was tampered with (Slack returns what the app set; this one is not ours).
    shown.view.private_metadata = "{not json";
    const garbage = e2e.slack.submitView(shown.id, { [INPUT]: { value: "x" } });
    await garbage.ack;
    expect(garbage.response).toEqual({
      response_action: "errors",
      errors: { [INPUT]: "This form is no longer valid: close it and use the buttons on the approval card." },
    });
    // The right approval id, but another thread: that thread's records know nothing of it.
    shown.view.private_metadata = JSON.stringify({ ...genuine, thread: `${mention.ts}9` });
    await e2e.slack.submitView(shown.id, { [INPUT]: { value: "forged" } }).ack;
    const notice = await noticeTo(ALICE, (text) => text.includes("no longer pending"));
    expect(notice.text).toBe("This approval is no longer pending.");
    expect(pending.edits).toBe(0);
    expect((await record(mention, pending)).status).toBe("pending");
    e2e.slack.click(ALICE, pending, "threadline:deny:");
    await decided(pending, "Denied* by Alice");
    await e2e.waitForText(mention, "Not deployed.");
  });

  it("the fake refuses a views.open whose trigger_id is over 3 s old", async () => {
    const { pending, before } = await pendingCard(deploy("m4"), textReply("Not deployed."));
    const click = e2e.slack.click(ALICE, pending, "threadline:reason:");
    ageTriggers(e2e.slack.store, 10_000); // the click's trigger is issued at once; age it before the app uses it
    await click.ack;
    await e2e.until("views.open refused", async () =>
      e2e.slack.callsOf("views.open").some((call) => call.outcome === "expired_trigger_id"),
    );
    expect(openedViews(e2e.slack.store).length).toBe(before);
    const notice = await noticeTo(ALICE, (text) => text.includes("could not be opened"));
    expect(notice.text).toBe("The form could not be opened in time; please click the button again.");
    expect(hasButtons(pending)).toBe(true); // nothing was decided
    await e2e.slack.click(ALICE, pending, "threadline:deny:").ack;
  });
});
