import { describe, expect, it } from "vitest";
import { feedbackBlock, parseFeedbackAction } from "../../src/slack/index.js";
import { blockErrors } from "../fakes/slack-blocks.js";

describe("feedback blocks", () => {
  it("are a context_actions block the fake (Slack's limits) accepts, naming the run", () => {
    const block = feedbackBlock("run-1", "1700000000.000100");
    expect(blockErrors([block])).toEqual([]);
    expect(parseFeedbackAction({ value: "negative", block_id: block.block_id })).toEqual({
      value: "negative",
      runId: "run-1",
    });
    expect(
      parseFeedbackAction({ value: "positive", block_id: feedbackBlock(undefined, "1.2").block_id }),
    ).toEqual({ value: "positive", runId: undefined });
    expect(parseFeedbackAction({ value: "meh", block_id: block.block_id })).toBeUndefined();
  });

  it("the fake refuses shapes Slack refuses", () => {
    const element = (feedbackBlock("r", "1.2").elements as Record<string, unknown>[])[0]!;
    const { negative_button: _dropped, ...oneSided } = element;
    expect(blockErrors([{ type: "context_actions", elements: [oneSided] }])).toEqual([
      "/0/elements/0/negative_button: required",
    ]);
    expect(blockErrors([{ type: "context_actions", elements: Array(6).fill(element) }])).toContain(
      "/0/elements: 1 to 5 elements",
    );
    expect(blockErrors([{ type: "context_actions", elements: [{ type: "button" }] }])).toEqual([
      "/0/elements/0/type: must be feedback_buttons or icon_button",
    ]);
  });
});
