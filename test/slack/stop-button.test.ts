import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { textReply, toolCallReply } from "../fakes/openai-server.js";
import type { FakeMessage } from "../fakes/slack-server.js";
import { ALICE, BOB, CAROL, SlackE2E } from "./e2e-harness.js";

/**
 * Slack's native Stop button (`agent_session_stopped`, https://docs.slack.dev/reference/events/agent_session_stopped)
 * with the real gateway and worker processes: it is a 🛑 from the clicker, and the agent session follows
 * the run (processing → active).
 */
describe.each(["socket", "http"] as const)("Slack's Stop button (%s)", (mode) => {
  let e2e: SlackE2E;
  beforeAll(async () => {
    e2e = await SlackE2E.start({ mode });
  }, 60_000);
  afterAll(async () => {
    await e2e?.close();
  });

  const session = (root: FakeMessage) => e2e.slack.store.session(root.channel, root.ts);
  const processing = (root: FakeMessage) =>
    e2e.slack.store.waitFor("a processing session", () => session(root)?.status === "processing");

  it("stops the run for its requester: the tool is aborted, a queued reply marked ⏹, the session active", async () => {
    const tag = e2e.tag(toolCallReply([{ id: "s1", name: "sleep", arguments: { ms: 60_000 } }]));
    const mention = e2e.mention(tag, "take a long nap");
    await e2e.waitForText(mention, "sleep");
    const queued = e2e.reply(mention, "and then wake up", BOB);
    await e2e.waitForReaction(queued, "compass");
    await processing(mention);
    const click = e2e.slack.clickStop(ALICE, mention);
    await click.ack;
    await e2e.waitForRunsEnded(mention);
    await e2e.waitForReaction(queued, "black_square_for_stop");
    const text = e2e.visibleTexts(mention).join("\n");
    expect(text).toContain("sleep was aborted");
    expect(text).toContain("Stopped by Alice");
    expect(e2e.requests(tag)).toHaveLength(1);
    expect(session(mention)?.title).toBe(`[${tag}] take a long nap`);
    await e2e.slack.store.waitFor("an active session", () => session(mention)?.status === "active");
    expect(e2e.slack.store.ephemerals.filter((n) => n.user === ALICE)).toEqual([]);
  });

  it("refuses anyone else privately: the run goes on and its answer arrives complete", async () => {
    const tag = e2e.tag(
      toolCallReply([{ id: "n1", name: "sleep", arguments: { ms: 2500 } }]),
      textReply("Rested and done.", { pieceSize: 4 }),
    );
    const mention = e2e.mention(tag, "nap, then report");
    await e2e.waitForText(mention, "sleep");
    await processing(mention);
    await e2e.slack.clickStop(CAROL, mention).ack;
    const notice = await e2e.slack.store.waitFor("a notice for Carol", () =>
      e2e.slack.store.ephemerals.find((n) => n.user === CAROL && n.threadTs === mention.ts),
    );
    expect(notice.text).toContain("can't stop");
    await e2e.waitForRunsEnded(mention);
    const text = e2e.visibleTexts(mention).join("\n");
    expect(text).toContain("Rested and done.");
    expect(text).not.toContain("Stopped by");
    expect(e2e.requests(tag)).toHaveLength(2);
    await e2e.slack.store.waitFor("an active session", () => session(mention)?.status === "active");
  });

  it("in a thread where nothing runs, settles a session left processing (a worker died mid-run)", async () => {
    const tag = e2e.tag(textReply("Done."));
    const mention = e2e.mention(tag, "quick one");
    await e2e.waitForRunsEnded(mention);
    await e2e.slack.store.waitFor("an active session", () => session(mention)?.status === "active");
    // What a worker killed mid-run leaves behind: Slack still shows the session working, with its Stop button.
    session(mention)!.status = "processing";
    await e2e.slack.clickStop(ALICE, mention).ack;
    await e2e.slack.store.waitFor("the session settled", () => session(mention)?.status === "active");
    expect(e2e.requests(tag)).toHaveLength(1);
    expect(e2e.visibleTexts(mention).join("\n")).not.toContain("Stopped by");
  });
});
