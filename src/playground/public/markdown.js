// A small, safe Markdown renderer for the playground. Every character of the input is HTML-escaped
// first; the only tags in the output are the ones this file writes, and links keep only http(s) and
// mailto targets. It covers what the bot writes: paragraphs, headings, lists, quotes, code, emphasis,
// links, rules and Discord's `-# ` subtext (the run footer), rendered as small secondary text.

const ESCAPES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

/** Escapes text for use in HTML content and quoted attribute values. */
export function escapeHtml(text) {
  return text.replace(/[&<>"']/g, (char) => ESCAPES[char]);
}

const FENCE = /^\s{0,3}(`{3,}|~{3,})\s*([\w+#.-]*)/;
const HEADING = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const RULE = /^\s{0,3}([-*_])(\s*\1){2,}\s*$/;
const QUOTE = /^\s{0,3}>\s?/;
const ITEM = /^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$/;
const SUBTEXT = /^-# +(\S.*)$/;

/** Renders Markdown to HTML that is safe to assign to `innerHTML`. */
export function renderMarkdown(source) {
  const lines = String(source).replace(/\0/g, "").replace(/\r\n?/g, "\n").split("\n");
  return renderBlocks(lines).join("");
}

function renderBlocks(lines) {
  const out = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    const fence = FENCE.exec(line);
    if (fence) {
      const marker = fence[1];
      const code = [];
      i++;
      while (i < lines.length && !lines[i].trim().startsWith(marker)) code.push(lines[i++]);
      i++;
      const lang = fence[2] ? ` class="language-${escapeHtml(fence[2])}"` : "";
      out.push(`<pre><code${lang}>${escapeHtml(code.join("\n"))}</code></pre>`);
      continue;
    }
    if (line.trim() === "") {
      i++;
      continue;
    }
    const heading = HEADING.exec(line);
    if (heading) {
      const level = Math.min(6, heading[1].length + 2);
      out.push(`<h${level}>${inline(heading[2])}</h${level}>`);
      i++;
      continue;
    }
    if (RULE.test(line)) {
      out.push("<hr>");
      i++;
      continue;
    }
    const subtext = SUBTEXT.exec(line);
    if (subtext) {
      out.push(`<p class="subtext">${inline(subtext[1])}</p>`);
      i++;
      continue;
    }
    if (QUOTE.test(line)) {
      const quoted = [];
      while (i < lines.length && QUOTE.test(lines[i])) quoted.push(lines[i++].replace(QUOTE, ""));
      out.push(`<blockquote>${renderBlocks(quoted).join("")}</blockquote>`);
      continue;
    }
    if (ITEM.test(line)) {
      i = renderList(lines, i, out);
      continue;
    }
    const paragraph = [];
    while (i < lines.length && lines[i].trim() !== "" && !startsBlock(lines[i])) paragraph.push(lines[i++]);
    out.push(`<p>${inline(paragraph.join("\n"))}</p>`);
  }
  return out;
}

function startsBlock(line) {
  return (
    FENCE.test(line) ||
    HEADING.test(line) ||
    QUOTE.test(line) ||
    ITEM.test(line) ||
    RULE.test(line) ||
    SUBTEXT.test(line)
  );
}

/** One list (nested items are indented under their parent); returns the next line index. */
function renderList(lines, start, out) {
  const first = ITEM.exec(lines[start]);
  const indent = first[1].length;
  const ordered = /\d/.test(first[2]);
  const items = [];
  let i = start;
  while (i < lines.length) {
    const item = ITEM.exec(lines[i]);
    if (item && item[1].length === indent) {
      items.push({ text: [item[3]], children: [] });
      i++;
    } else if (lines[i].trim() !== "" && items.length > 0 && leadingSpaces(lines[i]) > indent) {
      const current = items[items.length - 1];
      if (ITEM.test(lines[i]) || current.children.length > 0) current.children.push(lines[i]);
      else current.text.push(lines[i].trim());
      i++;
    } else break;
  }
  const tag = ordered ? "ol" : "ul";
  const startAttr =
    ordered && Number.parseInt(first[2], 10) !== 1 ? ` start="${Number.parseInt(first[2], 10)}"` : "";
  const body = items
    .map(
      (item) =>
        `<li>${inline(item.text.join("\n"))}${item.children.length ? renderBlocks(item.children).join("") : ""}</li>`,
    )
    .join("");
  out.push(`<${tag}${startAttr}>${body}</${tag}>`);
  return i;
}

function leadingSpaces(line) {
  return line.length - line.trimStart().length;
}

// A code span, or a backslash-escaped punctuation character (whichever starts first wins, so "\`" never
// opens a code span and escapes inside code spans stay literal).
const CODE_OR_ESCAPE = /(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)|\\([!-/:-@[-`{-~])/g;
const LINK = /\[([^\]\n]+)\]\(\s*([^)\s]+)\s*\)/g;
const AUTOLINK = /\bhttps?:\/\/(?:(?!&(?:quot|lt|gt|#39);)[^\s\0])+/g;
const SAFE_URL = /^(https?:|mailto:)/i;
const PLACEHOLDER = /\0(\d+)\0/g;

/** Inline Markdown: code spans, links, bold, italics, strike-through and line breaks. */
function inline(text) {
  const held = [];
  const hold = (html) => `\0${held.push(html) - 1}\0`;
  // Code spans are taken out first (their content is literal), then everything else is escaped, and only
  // then are links and emphasis turned into tags: no input character can become markup.
  let html = escapeHtml(
    text.replace(CODE_OR_ESCAPE, (_match, _ticks, code, escaped) =>
      hold(escaped === undefined ? `<code>${escapeHtml(code.trim())}</code>` : escapeHtml(escaped)),
    ),
  );
  html = html.replace(LINK, (match, label, url) =>
    SAFE_URL.test(url) ? hold(link(url, emphasis(label))) : match,
  );
  html = html.replace(AUTOLINK, (match) => {
    const url = match.replace(/[.,;:!?)]+$/, "");
    return hold(link(url, url)) + match.slice(url.length);
  });
  html = emphasis(html);
  while (html.includes("\0")) html = html.replace(PLACEHOLDER, (_match, index) => held[Number(index)]);
  return html;
}

/** Bold, italics, strike-through and line breaks in already escaped text. */
function emphasis(html) {
  return html
    .replace(/\*\*(?=\S)([\s\S]*?\S)\*\*/g, "<strong>$1</strong>")
    .replace(/(^|[^\w])__(?=\S)([\s\S]*?\S)__(?!\w)/g, "$1<strong>$2</strong>")
    .replace(/(^|[^*\w])\*(?=[^\s*])([\s\S]*?[^\s*])\*(?!\w)/g, "$1<em>$2</em>")
    .replace(/(^|[^\w])_(?=[^\s_])([\s\S]*?[^\s_])_(?!\w)/g, "$1<em>$2</em>")
    .replace(/~~(?=\S)([\s\S]*?\S)~~/g, "<del>$1</del>")
    .replace(/\n/g, "<br>");
}

/** An external link; `url` and `labelHtml` are already escaped. */
function link(url, labelHtml) {
  return `<a href="${url}" target="_blank" rel="noopener noreferrer">${labelHtml}</a>`;
}
