import { describe, expect, it } from "vitest";
import { renderMarkdown } from "../../src/playground/public/markdown.js";

describe("playground Markdown renderer (browser module)", () => {
  it("renders what the bot writes: emphasis, code, lists, quotes, headings, links", () => {
    expect(renderMarkdown("Deployed to **production** and *staging*, ~~not~~ `dev`.")).toBe(
      "<p>Deployed to <strong>production</strong> and <em>staging</em>, <del>not</del> <code>dev</code>.</p>",
    );
    expect(renderMarkdown("## Plan\n\n- one\n- two\n  - nested\n\n1. first\n2. second")).toBe(
      "<h4>Plan</h4><ul><li>one</li><li>two<ul><li>nested</li></ul></li></ul><ol><li>first</li><li>second</li></ol>",
    );
    expect(renderMarkdown("```ts\nconst a = 1 < 2;\n```\n> quoted *text*\n\nline\nbreak")).toBe(
      '<pre><code class="language-ts">const a = 1 &lt; 2;</code></pre><blockquote><p>quoted <em>text</em></p></blockquote><p>line<br>break</p>',
    );
    expect(renderMarkdown("[docs](https://example.com/?a=1&b=2) and https://example.com/x.")).toBe(
      '<p><a href="https://example.com/?a=1&amp;b=2" target="_blank" rel="noopener noreferrer">docs</a> and <a href="https://example.com/x" target="_blank" rel="noopener noreferrer">https://example.com/x</a>.</p>',
    );
  });

  it("renders Discord's -# subtext (the run footer) as a secondary paragraph of its own", () => {
    expect(renderMarkdown("Done.\n\n-# 2 turns · 1.7k tokens · $0.004")).toBe(
      '<p>Done.</p><p class="subtext">2 turns · 1.7k tokens · $0.004</p>',
    );
    expect(renderMarkdown("Answer\n-# _small_")).toBe('<p>Answer</p><p class="subtext"><em>small</em></p>');
    expect(renderMarkdown("-#not subtext")).toBe("<p>-#not subtext</p>");
  });

  it("honours backslash escapes (progress lines escape tool names) and keeps code literal", () => {
    expect(renderMarkdown("🔧 read\\_file ✓ 1.2s \\*x\\* `a\\*b` snake_case")).toBe(
      "<p>🔧 read_file ✓ 1.2s *x* <code>a\\*b</code> snake_case</p>",
    );
  });

  it("never lets input become markup", () => {
    const attacks = [
      '<img src=x onerror="alert(1)">',
      "<script>alert(1)</script>",
      "[click](javascript:alert(1))",
      '[x](https://a.example/"onmouseover="alert(1))',
      '**<b onclick="alert(1)">bold</b>**',
      "```\n</code></pre><script>alert(1)</script>\n```",
      "`<svg onload=alert(1)>`",
      "\u0000 0 \u0000 [a](https://b.example) \u00000\u0000",
    ];
    for (const attack of attacks) {
      const html = renderMarkdown(attack);
      const tags = [...html.matchAll(/<(\/?)([a-z0-9]+)([^>]*)>/g)];
      expect(tags.length).toBeGreaterThan(0);
      for (const [, closing, name, attributes] of tags) {
        expect(["p", "strong", "em", "code", "pre", "a", "br", "del"]).toContain(name);
        if (closing) expect(attributes).toBe("");
        else if (name === "a")
          expect(attributes).toMatch(/^ href="https:\/\/[^"]*" target="_blank" rel="noopener noreferrer"$/);
        else expect(attributes ?? "").toMatch(/^( class="language-[\w+#.-]+")?$/);
      }
    }
    expect(renderMarkdown(attacks[0]!)).toBe("<p>&lt;img src=x onerror=&quot;alert(1)&quot;&gt;</p>");
  });
});
