import slackifyMarkdown from "slackify-markdown";
import { describe, expect, it } from "vitest";
import { MARKDOWN_DIALECT } from "../../src/chat/index.js";
import { DISCORD_DIALECT } from "../../src/discord/dialect.js";
import { createMrkdwnConverter, SLACK_DIALECT, toSlackMrkdwn } from "../../src/slack/dialect.js";

const ZWS = "\u200b";

describe("Slack mrkdwn (SLACK_DIALECT)", () => {
  it("keeps Markdown for the markdown and discord dialects", () => {
    const markdown = "# Title\n\n**bold** [link](https://example.com)\n\n| a | b |\n|---|---|\n| 1 | 2 |";
    expect(MARKDOWN_DIALECT.toMarkup(markdown)).toBe(markdown);
    expect(DISCORD_DIALECT.toMarkup(markdown)).toBe(markdown);
  });

  it.each([
    [
      "bold, italic, strike",
      "**bold**, *italic*, ~~strike~~",
      `${ZWS}*bold*${ZWS}, ${ZWS}_italic_${ZWS}, ${ZWS}~strike~${ZWS}`,
    ],
    [
      "links",
      "[Threadline](https://example.com/docs?a=1&b=2)",
      "<https://example.com/docs?a=1&b=2|Threadline>",
    ],
    ["bare links", "see <https://example.com>", "see <https://example.com|https://example.com>"],
    ["headings as bold lines", "# Title\n\n## Sub\ntext", "*Title*\n\n*Sub*\n\ntext"],
    ["bullet lists", "- one\n- two\n  - nested", "•   one\n•   two\n    •   nested"],
    ["ordered lists", "1. first\n2. second", "1.  first\n2.  second"],
    ["special characters in text", "Tom & Jerry <3 > 2", "Tom &amp; Jerry &lt;3 &gt; 2"],
    [
      "code blocks, escaped as Slack requires",
      "```ts\nif (a < b && c > d) {}\n```",
      "```\nif (a &lt; b &amp;&amp; c &gt; d) {}\n```",
    ],
    ["inline code", "run `a<b && c` now", "run `a&lt;b &amp;&amp; c` now"],
    ["thematic breaks", "above\n\n---\n\nbelow", "above\n\n──────────\n\nbelow"],
    ["escaped Markdown", "john\\_doe \\*literally\\*", "john_doe *literally*"],
  ])("converts %s to Slack mrkdwn", (_name, markdown, slack) => {
    expect(SLACK_DIALECT.toMarkup(markdown)).toBe(slack);
  });

  it("degrades tables to a header line and one line per row, keeping links and code intact", () => {
    const table = [
      "Results:",
      "",
      "| Tool | Time | Notes |",
      "| --- | ---: | --- |",
      "| **search** | 1.2s | [docs](https://x.io/a) |",
      "| shell | 3s | `a\\|b` and line<br>break |",
      "",
      "After.",
    ].join("\n");
    expect(SLACK_DIALECT.toMarkup(table)).toBe(
      [
        "Results:",
        "",
        `${ZWS}*Tool*${ZWS} · ${ZWS}*Time*${ZWS} · ${ZWS}*Notes*${ZWS}`,
        `• ${ZWS}*search*${ZWS} · 1.2s · <https://x.io/a|docs>`,
        "• shell · 3s · `a|b` and line; break",
        "",
        "After.",
      ].join("\n"),
    );
  });

  it("leaves table-like lines inside code blocks alone", () => {
    const markdown = "```\n| a | b |\n|---|---|\n```";
    expect(SLACK_DIALECT.toMarkup(markdown)).toBe(markdown);
  });

  it("converts chunk by chunk exactly as the library converts the whole document", () => {
    const documents = [
      "# Plan\n\nFirst **do** this.\n\n1. one\n\n2. two\n\n- a\n  continued\n\n  second paragraph of a\n- b\n\n> quoted\n> more\n\nEnd.",
      "Intro:\n```js\nconsole.log(1);\n```\nAfter the code.\n\n```\nplain\n```",
      "- item\n\n  ```sh\n  echo hi\n  ```\n\n- next\n\nText with `code` and _emphasis_.",
    ];
    for (const document of documents) {
      expect(SLACK_DIALECT.toMarkup(document)).toBe(slackifyMarkdown(document).trim());
    }
  });

  it("a caching converter returns what toSlackMrkdwn returns, as the text grows", () => {
    const convert = createMrkdwnConverter(4);
    const full =
      "Intro with **bold**.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```ts\nconst x = 1 < 2;\n```\n\n- one\n- two\n\nThe end & more.";
    for (let length = 1; length <= full.length; length += 7) {
      const text = full.slice(0, length);
      expect(convert(text)).toBe(toSlackMrkdwn(text));
    }
    expect(SLACK_DIALECT.createConverter?.()("**x**")).toBe(SLACK_DIALECT.toMarkup("**x**"));
  });
});
