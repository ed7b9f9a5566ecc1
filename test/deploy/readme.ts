/** Reading README.md the way a newcomer does: its sections, code blocks and inline commands. */

/** The text of the section titled `title` (any heading level) up to the next heading of that level or above. */
export function section(markdown: string, title: string): string {
  const lines = markdown.split("\n");
  const start = lines.findIndex(
    (line) => /^#{1,6} /.test(line) && line.replace(/^#+ /, "").startsWith(title),
  );
  if (start < 0) throw new Error(`README.md has no section "${title}"`);
  const level = (lines[start] ?? "").match(/^#+/)?.[0].length ?? 2;
  let end = start + 1;
  let fenced = false;
  for (; end < lines.length; end++) {
    const line = lines[end] ?? "";
    if (line.startsWith("```")) fenced = !fenced;
    const heading = !fenced && line.match(/^(#{1,6}) /);
    if (heading && (heading[1]?.length ?? 7) <= level) break;
  }
  return lines.slice(start, end).join("\n");
}

/**
 * The fenced code blocks of `lang`, in order, as lines. Shell blocks (`sh`) lose comments and blank lines, so
 * each line is one command as typed.
 */
export function codeBlocks(text: string, lang: string): string[][] {
  const blocks: string[][] = [];
  let current: string[] | undefined;
  for (const line of text.split("\n")) {
    if (current === undefined) {
      if (line.trim() === `\`\`\`${lang}`) current = [];
    } else if (line.trim() === "```") {
      blocks.push(current);
      current = undefined;
    } else {
      current.push(line);
    }
  }
  if (lang !== "sh") return blocks;
  return blocks.map((block) =>
    block
      .map((line) => line.replace(/\s+#.*$/, "").trim())
      .filter((line) => line !== "" && !line.startsWith("#")),
  );
}

/** Inline code spans that are npm / npx commands (`npm run doctor`, `npx threadline start`), in order. */
export function inlineCommands(markdown: string): string[] {
  return [...markdown.matchAll(/`((?:npm|npx) [^`]+)`/g)].map((match) => match[1] ?? "");
}
