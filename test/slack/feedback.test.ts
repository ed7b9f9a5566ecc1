import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { textReply } from "../fakes/openai-server.js";
import type { FakeMessage } from "../fakes/slack-server.js";
import { ALICE, BOB, SlackE2E } from "./e2e-harness.js";

/** A context_actions block as the tests read it. */
interface FeedbackBlock {
  type: string;
  block_id: string;
  elements: { type: string; positive_button: { value: string }; negative_button: { value: string } }[];
}

const feedbackOf = (message: FakeMessage): FeedbackBlock | undefined =>
  ([...(message.blocks ?? []), ...(message.footerBlocks ?? [])] as FeedbackBlock[]).find(
    (block) => block.type === "context_actions",
  );

/**
 * 👍 / 👎 under a finished answer (Block Kit `feedback_buttons`,
 * https://docs.slack.dev/reference/block-kit/blocks/context-actions-block), with the real gateway and
 * worker processes: in `chat.stopStream`'s blocks when the answer streamed, in the final `chat.update`
 * when it was posted and edited; a click is one log line naming thread, run, user and value, and a
 * repeated click is neither recorded again nor answered with an error.
 */
describe.each([
  { name: "native stream", streaming: true },
  { name: "post and edit", streaming: false },
])("feedback buttons ($name)", ({ streaming }) => {
  let e2e: SlackE2E;
  beforeAll(async () => {
    e2e = await SlackE2E.start({ slack: { streaming } });
  }, 60_000);
  afterAll(async () => {
    await e2e?.close();
  });

  it("puts them under the last message of the answer and records each click once", async () => {
    const tag = e2e.tag(textReply("The answer is *42*.", { pieceSize: 5 }));
    const mention = e2e.mention(tag, "what is the answer?");
    await e2e.waitForRunsEnded(mention);
    const answer = await e2e.slack.store.waitFor("feedback buttons", () =>
      e2e.botMessages(mention).find((message) => feedbackOf(message) !== undefined),
    );
    // Only the answer's last message carries them, and its text is still shown.
    expect(e2e.botMessages(mention).filter((message) => feedbackOf(message))).toHaveLength(1);
    expect(answer).toBe(e2e.botMessages(mention).at(-1));
    expect(answer.text).toContain("42");
    // Posted and edited: blocks replace the text, so the answer is repeated in a section, the run footer
    // (kept in `text` for notifications) follows as a context block, and the buttons come last.
    if (!streaming) {
      const [body, footer, feedback] = answer.blocks ?? [];
      const lines = answer.text.split("\n");
      expect(body).toEqual({ type: "section", text: { type: "mrkdwn", text: lines[0] } });
      expect(footer).toMatchObject({ type: "context", elements: [{ type: "mrkdwn" }] });
      expect(JSON.stringify(footer)).toContain("1 turn · 15 tokens");
      expect(feedback).toBe(feedbackOf(answer));
    }
    const block = feedbackOf(answer)!;
    expect(block.elements[0]?.type).toBe("feedback_buttons");
    const runId = String(e2e.worker.logs("run finished")[0]?.runId);
    expect(block.block_id).toContain(runId);

    await e2e.slack.clickFeedback(ALICE, answer, "positive").ack;
    await e2e.slack.clickFeedback(ALICE, answer, "positive").ack;
    await e2e.slack.clickFeedback(BOB, answer, "negative").ack;
    await e2e.slack.clickFeedback(ALICE, answer, "negative").ack;
    await e2e.slack.clickFeedback(BOB, answer, "positive").ack;
    const recorded = () => e2e.gateway.logs("slack: answer feedback");
    const byUser = (user: string) =>
      recorded()
        .filter((line) => line.user === user)
        .map((line) => line.value);
    // One user's clicks are handled in order (one ledger key, so one Redis connection even in a Cluster);
    // two users' clicks may be recorded in either order (their keys can live on different Cluster nodes).
    // So each user's last click being recorded proves that user's repeated click was skipped, not late.
    await e2e.until(
      "each user's last click recorded",
      async () => byUser(ALICE).includes("negative") && byUser(BOB).includes("positive"),
    );
    expect(byUser(ALICE)).toEqual(["positive", "negative"]);
    expect(byUser(BOB)).toEqual(["negative", "positive"]);
    expect(recorded()).toHaveLength(4);
    for (const line of recorded()) {
      expect(line.run).toBe(runId);
      expect(line.thread).toBe(`slack:${e2e.slack.config.teamId}:${mention.channel}:${mention.ts}`);
    }
    // Clicking twice is no error: nobody is told anything.
    expect(e2e.slack.store.ephemerals).toEqual([]);
  });
});
