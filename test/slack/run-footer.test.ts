import { afterEach, describe, expect, it } from "vitest";
import { events as e } from "../chat/events.js";
import type { FakeSlackServer } from "../fakes/slack-server.js";
import { startSlackRenderer } from "../support/slack-renderer.js";

/**
 * Issue 15, item 11: the run footer is visibly secondary on Slack — a Block Kit `context` block (small grey
 * text) under the answer, not an italic last line of it — while the message's `text` keeps it for
 * notifications. Checked against the fake Slack, which refuses invalid context blocks.
 */

let slack: FakeSlackServer;
afterEach(async () => {
  await slack?.close();
});

const stats = { turns: 2, toolCalls: 1, inputTokens: 1200, outputTokens: 500, cost: 0.004 };
const FOOTER = "2 turns · 1 tool call · 1.7k tokens · $0.004";

async function run(options: { streaming: boolean; feedback: boolean }) {
  const started = await startSlackRenderer({ text: "what is up", outbound: options });
  slack = started.slack;
  const { renderer, errors } = started;
  renderer.handle(e.turnStart());
  renderer.handle(e.assistantStart());
  renderer.handle(e.text("All good here."));
  renderer.handle(e.assistantEnd());
  await renderer.finish({ kind: "completed" }, stats);
  return { errors, bot: started.bot() };
}

const footerContext = { type: "context", elements: [{ type: "mrkdwn", text: FOOTER }] };

describe("the run footer on Slack", () => {
  for (const feedback of [true, false]) {
    it(`is a context block under a posted-and-edited answer; text keeps it as the fallback (feedback ${feedback ? "on" : "off"})`, async () => {
      const { errors, bot } = await run({ streaming: false, feedback });
      expect(errors).toEqual([]);
      expect(bot).toHaveLength(1);
      const [reply] = bot;
      // The notification fallback: the whole reply, footer in italics (as the renderer wrote it).
      expect(reply!.text).toBe(`All good here.\n\n\u200b_${FOOTER}_\u200b`);
      const blocks = reply!.blocks as Record<string, unknown>[];
      expect(blocks.slice(0, 2)).toEqual([
        { type: "section", text: { type: "mrkdwn", text: "All good here." } },
        footerContext,
      ]);
      expect(blocks.slice(2).map((block) => block.type)).toEqual(feedback ? ["context_actions"] : []);
    });

    it(`is a context block in chat.stopStream's blocks at the end of a native stream, not streamed text (feedback ${feedback ? "on" : "off"})`, async () => {
      const { errors, bot } = await run({ streaming: true, feedback });
      expect(errors).toEqual([]);
      expect(bot).toHaveLength(1);
      const [reply] = bot;
      expect(reply!.streamed).toBe(true);
      expect(reply!.text).not.toContain("turns ·");
      const blocks = (reply!.footerBlocks ?? []) as Record<string, unknown>[];
      expect(blocks[0]).toEqual(footerContext);
      expect(blocks.slice(1).map((block) => block.type)).toEqual(feedback ? ["context_actions"] : []);
    });
  }
});
