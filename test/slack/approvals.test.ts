import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { textReply, toolCallReply } from "../fakes/openai-server.js";
import type { FakeMessage } from "../fakes/slack-server.js";
import { ALICE, BOB, CAROL, SlackE2E } from "./e2e-harness.js";

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

async function decided(message: FakeMessage, text: string): Promise<FakeMessage> {
  return e2e.slack.store.waitFor(`card shows "${text}"`, () =>
    message.text.includes(text) && !hasButtons(message) ? message : undefined,
  );
}

describe("approval cards on Slack", () => {
  it("shows the tool, its arguments, who may decide and the buttons; Approve runs the tool", async () => {
    const tag = e2e.tag(deploy("d1"), textReply("Deployed."));
    const mention = e2e.mention(tag, "deploy the api");
    const pending = await card(mention);
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
      "alwaysThread",
    ]);
    expect(labels(pending)).toEqual([
      "Approve",
      "Deny",
      "Always allow deploy for Alice in this thread",
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
    const tag = e2e.tag(deploy("d2"), textReply("Not deployed."));
    const mention = e2e.mention(tag, "deploy the api");
    const pending = await card(mention);
    await e2e.slack.click(BOB, pending, "threadline:approve:").ack;
    const notice = await e2e.slack.store.waitFor("a notice to Bob", () =>
      e2e.slack.store.ephemerals.find((entry) => entry.user === BOB),
    );
    expect(notice.text).toContain("You can't approve this");
    expect(hasButtons(pending)).toBe(true);
    expect(pending.edits).toBe(0);
    e2e.slack.click(CAROL, pending, "threadline:deny:");
    await decided(pending, "Denied* by Carol");
    await e2e.waitForRunsEnded(mention);
    expect(toolResult(tag, 1)).toContain("denied by Carol");
  });

  it("Always allow lets the requester's later calls of the tool in this thread run without a card", async () => {
    const tag = e2e.tag(
      deploy("d3"),
      textReply("Deployed once."),
      deploy("d4"),
      textReply("Deployed twice."),
    );
    const mention = e2e.mention(tag, "deploy");
    const pending = await card(mention);
    e2e.slack.click(ALICE, pending, "threadline:always:");
    await decided(pending, "Always allowed* `deploy` for Alice in this thread — by Alice");
    await e2e.waitForRunsEnded(mention);
    e2e.reply(mention, "again please");
    await e2e.waitForRunsEnded(mention, 2);
    expect(toolResult(tag, 3)).toBe("deployed api");
    expect(e2e.botMessages(mention).filter((message) => message.blocks !== undefined)).toHaveLength(1);
  });

  it("Always allow covers only the requester: someone else's later call in the thread gets a card", async () => {
    const tag = e2e.tag(
      deploy("d9"),
      textReply("Deployed for Alice."),
      deploy("d10"),
      textReply("Deployed for Bob."),
    );
    const mention = e2e.mention(tag, "deploy");
    const first = await card(mention);
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
    const tag = e2e.tag(
      deploy("d11"),
      textReply("Deployed once."),
      deploy("d12"),
      textReply("Deployed for Bob."),
    );
    const mention = e2e.mention(tag, "deploy");
    const pending = await card(mention);
    await e2e.slack.click(ALICE, pending, "threadline:alwaysThread:").ack;
    const notice = await e2e.slack.store.waitFor("a notice to Alice", () =>
      e2e.slack.store.ephemerals.find((entry) => entry.user === ALICE && entry.threadTs === mention.ts),
    );
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
    const tag = e2e.tag(deploy("d5"), textReply("Deployed."));
    const mention = e2e.mention(tag, "deploy");
    const pending = await card(mention);
    await Promise.all([
      e2e.slack.click(ALICE, pending, "threadline:approve:").ack,
      e2e.slack.click(ALICE, pending, "threadline:approve:").ack,
    ]);
    await decided(pending, "Approved* by Alice");
    const notice = await e2e.slack.store.waitFor("an already-decided notice", () =>
      e2e.slack.store.ephemerals.find((entry) => entry.user === ALICE && entry.threadTs === mention.ts),
    );
    expect(notice.text).toContain("already decided by Alice");
    await e2e.waitForRunsEnded(mention);
    expect(e2e.requests(tag)).toHaveLength(2);
    expect(toolResult(tag, 1)).toBe("deployed api");
  });

  it("no decision before the timeout denies with 'approval timed out' and the card says so", async () => {
    const tag = e2e.tag(deploy("d6"), textReply("Gave up."));
    const mention = e2e.mention(tag, "deploy");
    const pending = await card(mention);
    await decided(pending, "approval timed out");
    await e2e.waitForRunsEnded(mention);
    expect(toolResult(tag, 1)).toContain("approval timed out");
  });
});
