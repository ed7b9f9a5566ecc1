import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FakeMessage } from "../fakes/discord-server.js";
import { textReply, toolCallReply } from "../fakes/openai-server.js";
import { DiscordE2E, toolResults } from "./e2e-harness.js";

let e2e: DiscordE2E;
beforeAll(async () => {
  e2e = await DiscordE2E.start({ env: { THREADLINE_APPROVAL_TIMEOUT_MS: "4000" } });
}, 120_000);
afterAll(async () => {
  await e2e?.close();
});

const deployCall = (service: string) =>
  toolCallReply([{ id: `call-${service}`, name: "deploy", arguments: { service } }]);

interface Card {
  embeds: { title: string; description: string; fields: { name: string; value: string }[] }[];
  components: { components: { custom_id: string; label: string }[] }[];
}

/** Mentions the bot with a deploy request and resolves with the approval card the run posts. */
async function askForApproval(tag: string, service: string): Promise<{ thread: string; card: FakeMessage }> {
  const mention = e2e.mention(e2e.channel(), tag, `deploy ${service}`);
  const find = () => e2e.discord.botMessages(mention.id).find((message) => message.embeds.length > 0);
  await e2e.discord.waitFor(() => find() !== undefined);
  return { thread: mention.id, card: find()! };
}

function cardOf(message: FakeMessage): Card {
  return { embeds: message.embeds, components: message.components } as Card;
}

function buttonId(card: FakeMessage, decision: string): string {
  const ids = cardOf(card).components.flatMap((row) => row.components.map((button) => button.custom_id));
  const id = ids.find((candidate) => candidate.startsWith(`tl:${decision}:`));
  if (!id) throw new Error(`no ${decision} button on the card`);
  return id;
}

/** Resolves once the card was updated (edited) `count` times. */
async function cardUpdated(card: FakeMessage, count = 1): Promise<Card> {
  await e2e.discord.waitFor(() => card.history.length > count);
  return cardOf(card);
}

describe("Discord approval buttons (gateway and worker processes, fake Discord, real Redis)", () => {
  it("posts a card with the tool, its arguments, who decides and the expiry, and runs the tool on Approve", async () => {
    const tag = e2e.tag(deployCall("prod"), textReply("prod is deployed"));
    const { thread, card } = await askForApproval(tag, "prod");
    const posted = cardOf(card);
    expect(posted.embeds[0]?.title).toBe("Approval needed: deploy");
    expect(posted.embeds[0]?.description).toBe("```\nservice: prod\n```");
    expect(posted.embeds[0]?.fields.map((field) => field.name)).toEqual(["Who can decide", "Expires"]);
    expect(posted.embeds[0]?.fields[0]?.value).toBe("Alice");
    expect(posted.embeds[0]?.fields[1]?.value).toMatch(/^<t:\d+:R>$/);
    const buttons = posted.components[0]?.components ?? [];
    expect(buttons.map((button) => button.label)).toEqual([
      "Approve",
      "Deny",
      "Always allow deploy for Alice in this thread",
      "Edit and approve…",
      "Deny with reason…",
    ]);
    // No approvers are configured here, so nobody could grant it to everyone: no second row.
    expect(posted.components).toHaveLength(1);
    const approvalId = buttonId(card, "approve").slice("tl:approve:".length);
    expect(buttons.map((button) => button.custom_id)).toEqual([
      `tl:approve:${approvalId}`,
      `tl:deny:${approvalId}`,
      `tl:always:${approvalId}`,
      `tl:edit:${approvalId}`,
      `tl:reason:${approvalId}`,
    ]);

    e2e.discord.click(e2e.alice, card.id, buttonId(card, "approve"));
    const decided = await cardUpdated(card);
    expect(decided.components).toEqual([]);
    expect(decided.embeds[0]?.fields).toEqual([
      { name: "Decision", value: expect.stringMatching(/^✅ Approved by Alice, <t:\d+:f>$/) },
    ]);
    await e2e.waitForRuns(thread, 1, "prod is deployed");
    expect(toolResults(e2e.requests(tag)[1])).toEqual(["deployed prod"]);
  });

  it("answers every click within Discord's deadline, before the decision is processed", async () => {
    const tag = e2e.tag(deployCall("stage"), textReply("stage is deployed"));
    const { thread, card } = await askForApproval(tag, "stage");
    const click = e2e.discord.click(e2e.alice, card.id, buttonId(card, "approve"));
    await cardUpdated(card);
    await e2e.waitForRuns(thread, 1, "stage is deployed");

    expect(click.callback?.type).toBe(6);
    expect(click.rejectedCallbacks).toEqual([]);
    const callback = e2e.discord.requestsTo("POST", new RegExp(`^/interactions/${click.id}/`))[0]!;
    const update = e2e.discord.requestsTo("PATCH", new RegExp(`/messages/${card.id}$`))[0]!;
    expect(callback.seq).toBeLessThan(update.seq);
  });

  it("reports a denial to the model naming who denied", async () => {
    const tag = e2e.tag(deployCall("db"), textReply("understood, not deploying"));
    const { thread, card } = await askForApproval(tag, "db");
    e2e.discord.click(e2e.alice, card.id, buttonId(card, "deny"));
    const decided = await cardUpdated(card);
    await e2e.waitForRuns(thread, 1, "not deploying");

    expect(decided.embeds[0]?.fields[0]?.value).toMatch(/^❌ Denied by Alice, <t:\d+:f>$/);
    expect(toolResults(e2e.requests(tag)[1])).toEqual(["Tool call denied by Alice."]);
  });

  it("always allows the tool in the thread after Always allow", async () => {
    const tag = e2e.tag(
      deployCall("web"),
      textReply("web is deployed"),
      deployCall("api"),
      textReply("api too"),
    );
    const { thread, card } = await askForApproval(tag, "web");
    e2e.discord.click(e2e.alice, card.id, buttonId(card, "always"));
    const decided = await cardUpdated(card);
    await e2e.waitForRuns(thread, 1, "web is deployed");
    e2e.discord.say(thread, e2e.alice, "now the api please");
    await e2e.waitForRuns(thread, 2, "api too");

    expect(decided.embeds[0]?.fields[0]?.value).toMatch(
      /^✅ Always allowed `deploy` for Alice in this thread — by Alice/,
    );
    expect(e2e.discord.botMessages(thread).filter((message) => message.embeds.length > 0)).toHaveLength(1);
    expect(toolResults(e2e.requests(tag)[3]).at(-1)).toBe("deployed api");
  });

  it("denies with 'approval timed out' when nobody decides in time", async () => {
    const tag = e2e.tag(deployCall("cache"), textReply("it timed out"));
    const { thread, card } = await askForApproval(tag, "cache");
    const decided = await cardUpdated(card);
    await e2e.waitForRuns(thread, 1, "it timed out");

    expect(decided.components).toEqual([]);
    expect(decided.embeds[0]?.fields[0]?.value).toMatch(/^⌛ Denied: approval timed out/);
    expect(toolResults(e2e.requests(tag)[1])).toEqual(["approval timed out"]);
  });

  it("tells a user who may not decide so, privately, and changes nothing", async () => {
    const tag = e2e.tag(deployCall("billing"), textReply("billing is deployed"));
    const { thread, card } = await askForApproval(tag, "billing");
    const refused = e2e.discord.click(e2e.bob, card.id, buttonId(card, "approve"));
    await e2e.discord.waitFor(() => refused.followUps.length > 0);

    expect(refused.callback?.type).toBe(6);
    expect(refused.followUps).toEqual([
      {
        content: "You can't approve this: only the person who asked and the configured approvers can.",
        flags: 64,
        at: expect.any(Number),
      },
    ]);
    expect(card.history).toHaveLength(1);
    expect(cardOf(card).components[0]?.components).toHaveLength(5);

    e2e.discord.click(e2e.alice, card.id, buttonId(card, "approve"));
    await cardUpdated(card);
    await e2e.waitForRuns(thread, 1, "billing is deployed");
    expect(toolResults(e2e.requests(tag)[1])).toEqual(["deployed billing"]);
  });

  it("lets the first of two quick clicks win and tells the other clicker it was already decided", async () => {
    const tag = e2e.tag(deployCall("search"), textReply("search is handled"));
    const { thread, card } = await askForApproval(tag, "search");
    const clicks = [
      e2e.discord.click(e2e.alice, card.id, buttonId(card, "approve")),
      e2e.discord.click(e2e.alice, card.id, buttonId(card, "deny")),
    ];
    await e2e.discord.waitFor(() => clicks.some((click) => click.followUps.length > 0));
    const decided = await cardUpdated(card);
    await e2e.waitForRuns(thread, 1, "search is handled");

    // Whichever click Redis saw first decided; the card, the model and the other clicker agree on it.
    const approved = decided.embeds[0]?.fields[0]?.value.startsWith("✅ Approved by Alice") ?? false;
    const [winner, loser] = approved ? clicks : [clicks[1]!, clicks[0]!];
    expect(winner!.followUps).toEqual([]);
    expect(loser!.followUps.map((followUp) => [followUp.content, followUp.flags])).toEqual([
      [`This was already decided by Alice (${approved ? "approved" : "denied"}).`, 64],
    ]);
    expect(card.history).toHaveLength(2);
    expect(toolResults(e2e.requests(tag)[1])).toEqual([
      approved ? "deployed search" : "Tool call denied by Alice.",
    ]);
  });
});

describe("Discord deny with a reason and edit and approve (modals)", () => {
  const waitForCallback = (interaction: { callback?: { type: number } }) =>
    e2e.discord.waitFor(() => interaction.callback !== undefined);

  it("Deny with reason… answers with a modal; its submission denies with the reason, which the model reads", async () => {
    const tag = e2e.tag(deployCall("queue"), textReply("ok, not deploying queue"));
    const { thread, card } = await askForApproval(tag, "queue");
    const approvalId = buttonId(card, "reason").slice("tl:reason:".length);
    const opened = e2e.discord.click(e2e.alice, card.id, buttonId(card, "reason"));
    await waitForCallback(opened);
    expect(opened.callback?.type).toBe(9);
    expect(opened.callbackData).toMatchObject({
      custom_id: `tlm:reason:${approvalId}`,
      title: "Deny deploy with a reason",
      components: [{ type: 1, components: [{ type: 4, custom_id: "value", style: 2 }] }],
    });
    expect(card.history).toHaveLength(1); // opening the form decides nothing

    const submitted = e2e.discord.submitModal(e2e.alice, opened, { value: "queue is frozen today" });
    const decided = await cardUpdated(card);
    await e2e.waitForRuns(thread, 1, "not deploying queue");
    expect(submitted.callback?.type).toBe(6);
    expect(decided.embeds[0]?.fields[0]?.value).toMatch(
      /^❌ Denied by Alice, <t:\d+:f>\nReason: queue is frozen today$/,
    );
    expect(toolResults(e2e.requests(tag)[1])).toEqual(["Tool call denied by Alice: queue is frozen today"]);
  });

  it("someone who may not decide gets an ephemeral notice instead of a modal; a submission after the decision changes nothing", async () => {
    const tag = e2e.tag(deployCall("mail"), textReply("mail is deployed"));
    const { thread, card } = await askForApproval(tag, "mail");
    const refused = e2e.discord.click(e2e.bob, card.id, buttonId(card, "edit"));
    await waitForCallback(refused);
    expect(refused.callback?.type).toBe(4);
    expect(refused.callbackData).toMatchObject({
      content: "You can't approve this: only the person who asked and the configured approvers can.",
      flags: 64,
    });
    const opened = e2e.discord.click(e2e.alice, card.id, buttonId(card, "reason"));
    await waitForCallback(opened);
    e2e.discord.click(e2e.alice, card.id, buttonId(card, "approve"));
    await cardUpdated(card);
    const late = e2e.discord.submitModal(e2e.alice, opened, { value: "changed my mind" });
    await waitForCallback(late);
    expect(late.callbackData).toMatchObject({
      content: "This was already decided by Alice (approved).",
      flags: 64,
    });
    await e2e.waitForRuns(thread, 1, "mail is deployed");
    expect(toolResults(e2e.requests(tag)[1])).toEqual(["deployed mail"]);
  });

  it("Edit and approve…: an invalid edit gets an ephemeral error and the card stays pending; a valid one runs with the edited arguments", async () => {
    const tag = e2e.tag(deployCall("cdn"), textReply("cdn-eu is deployed"));
    const { thread, card } = await askForApproval(tag, "cdn");
    const first = e2e.discord.click(e2e.alice, card.id, buttonId(card, "edit"));
    await waitForCallback(first);
    expect(first.callback?.type).toBe(9);
    const input = (first.callbackData!.components as { components: { value?: string }[] }[])[0]
      ?.components[0];
    expect(input?.value).toBe('{\n  "service": "cdn"\n}');

    const invalid = e2e.discord.submitModal(e2e.alice, first, { value: '{"service": ["cdn-eu"]}' });
    await waitForCallback(invalid);
    expect(invalid.callback?.type).toBe(4);
    expect(invalid.callbackData).toMatchObject({ flags: 64 });
    expect(String(invalid.callbackData?.content)).toContain(
      "Your edit was not applied; the card still waits.",
    );
    expect(String(invalid.callbackData?.content)).toContain('Validation failed for tool "deploy":');
    expect(card.history).toHaveLength(1);
    expect(cardOf(card).components[0]?.components).toHaveLength(5);

    const second = e2e.discord.click(e2e.alice, card.id, buttonId(card, "edit"));
    await waitForCallback(second);
    const valid = e2e.discord.submitModal(e2e.alice, second, { value: '{"service": "cdn-eu"}' });
    const decided = await cardUpdated(card);
    await e2e.waitForRuns(thread, 1, "cdn-eu is deployed");
    expect(valid.callback?.type).toBe(6);
    expect(decided.embeds[0]?.fields).toEqual([
      { name: "Decision", value: expect.stringMatching(/^✅ Approved by Alice/) },
      { name: "Edited before approval", value: '`service: "cdn" → "cdn-eu"`' },
    ]);
    const [result] = toolResults(e2e.requests(tag)[1]);
    expect(result).toContain("Note: Alice edited the arguments before approving");
    expect(result).toContain('{"service":"cdn-eu"}');
    expect(result).toContain("deployed cdn-eu");
    const assistant = (
      e2e.requests(tag)[1]!.body as {
        messages: { role: string; tool_calls?: { function: { arguments: string } }[] }[];
      }
    ).messages.find((message) => message.role === "assistant");
    expect(JSON.parse(assistant?.tool_calls?.[0]?.function.arguments ?? "{}")).toEqual({ service: "cdn" });
  });
});
