import { describe, expect, it } from "vitest";
import { SLACK_DIALECT } from "../../src/slack/dialect.js";
import { mrkdwnToStreamMarkdown } from "../../src/slack/index.js";

describe("mrkdwn → streaming Markdown", () => {
  it("restores emphasis, links and entities outside code, and only entities inside code", () => {
    expect(mrkdwnToStreamMarkdown("*bold* _it_ ~gone~ <https://x.test|site> a &lt; b &amp; c")).toBe(
      "**bold** _it_ ~~gone~~ [site](https://x.test) a < b & c",
    );
    expect(mrkdwnToStreamMarkdown("```\nif (a &lt; b) *x*\n```\nand `*y* &gt;`")).toBe(
      "```\nif (a < b) *x*\n```\nand `*y* >`",
    );
    expect(mrkdwnToStreamMarkdown("ping <@U123> at <!date^1^{time}|now>")).toBe(
      "ping <@U123> at <!date^1^{time}|now>",
    );
  });

  it("turns what the renderer makes of model Markdown back into equivalent Markdown", () => {
    const markdown = "Use **bold** and [docs](https://docs.test), then:\n\n```js\nif (a < b && c) {}\n```";
    expect(mrkdwnToStreamMarkdown(SLACK_DIALECT.toMarkup(markdown))).toBe(
      "Use **bold** and [docs](https://docs.test), then:\n\n```\nif (a < b && c) {}\n```",
    );
  });
});
