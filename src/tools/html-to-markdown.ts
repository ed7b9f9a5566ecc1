import TurndownService from "turndown";

/** What a web page reads like: its title and its content as Markdown. */
export interface ReadablePage {
  title: string | undefined;
  markdown: string;
}

let service: TurndownService | undefined;

function turndown(): TurndownService {
  if (service) return service;
  service = new TurndownService({
    headingStyle: "atx",
    codeBlockStyle: "fenced",
    bulletListMarker: "-",
    emDelimiter: "_",
  });
  // The reader is a model, not a Markdown renderer: `fetch\_url` escapes are noise to it.
  service.escape = (text: string) => text;
  // Page chrome and code that carries no reading content.
  service.remove([
    "script",
    "style",
    "noscript",
    "template",
    "iframe",
    "svg",
    "canvas",
    "head",
    "form",
    "button",
  ]);
  // Inline images (data: URIs) would flood the model with base64; keep only their alt text.
  service.addRule("inlineImages", {
    filter: (node) => node.nodeName === "IMG" && (node.getAttribute("src") ?? "").startsWith("data:"),
    replacement: (_content, node) => {
      const alt = (node as unknown as { getAttribute(name: string): string | null }).getAttribute("alt");
      return alt ? `[image: ${alt}]` : "";
    },
  });
  return service;
}

function decodeEntities(text: string): string {
  return text
    .replace(/&amp;/g, "&")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&quot;/g, '"')
    .replace(/&#39;|&apos;/g, "'");
}

/**
 * Converts an HTML document to readable Markdown with turndown: scripts, styles, forms and frames are
 * dropped, headings become `#`, code blocks are fenced, and runs of blank lines are collapsed. The
 * `<main>` or `<article>` element is used when the page has one, so navigation and footers stay out.
 */
export function htmlToMarkdown(html: string): ReadablePage {
  const titleMatch = /<title[^>]*>([\s\S]*?)<\/title>/i.exec(html);
  const title = titleMatch?.[1] ? decodeEntities(titleMatch[1].replace(/\s+/g, " ").trim()) : undefined;
  const main = /<(main|article)\b[^>]*>([\s\S]*)<\/\1>/i.exec(html);
  const body = main?.[2] && main[2].length > 200 ? main[2] : html;
  const markdown = turndown()
    .turndown(body)
    .replace(/\n{3,}/g, "\n\n")
    .trim();
  return { title: title || undefined, markdown };
}
