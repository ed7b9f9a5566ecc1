import { describe, expect, it } from "vitest";
import { MIN_SPLIT_CHARS, splitMessage } from "../../src/chat/index.js";

/** Fence lines of a text, and whether it ends inside an open fence (a part that "breaks a fence"). */
function fenceState(text: string): { open: string | undefined } {
  let open: string | undefined;
  for (const line of text.split("\n")) {
    const fence = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence === undefined) continue;
    if (open === undefined) open = line;
    else if (line.trim().startsWith(open.trim().slice(0, 3)) && line.trim().replace(/[`~]/g, "") === "")
      open = undefined;
  }
  return { open };
}

/**
 * Undoes the fence repairs (for cuts at line boundaries): a part that ends with a closing fence while the
 * text rebuilt so far would otherwise still be inside the block had it added; the part after it must then
 * start with the block's opening fence line, which is dropped too.
 */
function reassemble(parts: string[]): string {
  let text = "";
  for (const [index, part] of parts.entries()) {
    let body = part;
    const open = fenceState(text).open;
    if (open !== undefined) {
      expect(body.startsWith(`${open}\n`), `part ${index} reopens ${open}`).toBe(true);
      body = body.slice(open.length + 1);
    }
    const closer = /[ \t]*(`{3,}|~{3,})$/.exec(body);
    if (closer && fenceState(text + body.slice(0, closer.index)).open !== undefined) {
      expect(index < parts.length - 1 || fenceState(text + body).open === undefined).toBe(true);
      if (index < parts.length - 1) body = body.slice(0, closer.index);
    }
    text += body;
  }
  return text;
}

function longAnswer(): string {
  const sections: string[] = [];
  for (let index = 0; sections.join("\n\n").length < 30_000; index++) {
    sections.push(
      `## Step ${index}\n\nThis paragraph explains step ${index} in some detail. `.repeat(2).trim(),
    );
    sections.push(`- item a${index}\n- item b${index}\n- item c${index}`);
    const lines = Array.from(
      { length: 8 + (index % 5) * 20 },
      (_, line) => `  const value${line} = ${index} * ${line};`,
    );
    sections.push(`\`\`\`ts\nfunction step${index}() {\n${lines.join("\n")}\n}\n\`\`\``);
  }
  sections.push(
    `\`\`\`python\n${Array.from({ length: 400 }, (_, line) => `print(${line})`).join("\n")}\n\`\`\``,
  );
  sections.push("Done.");
  return sections.join("\n\n");
}

describe("splitMessage", () => {
  it("returns short text unchanged, as one part", () => {
    expect(splitMessage("hello\n\n```\ncode\n```", 2000)).toEqual(["hello\n\n```\ncode\n```"]);
    expect(splitMessage("", 2000)).toEqual([""]);
  });

  it("splits a 30,000-character answer with code blocks into parts that fit, keep fences whole and lose nothing", () => {
    const answer = longAnswer();
    expect(answer.length).toBeGreaterThan(30_000);
    for (const max of [2000, 4000]) {
      const parts = splitMessage(answer, max);
      expect(parts.length).toBeGreaterThan(answer.length / max);
      for (const part of parts) {
        expect(part.length).toBeLessThanOrEqual(max);
        expect(fenceState(part).open).toBeUndefined();
      }
      expect(reassemble(parts)).toBe(answer);
    }
  });

  it("cuts at paragraph boundaries when it can, keeping parts at least half full", () => {
    const paragraphs = Array.from(
      { length: 12 },
      (_, index) => `Paragraph ${index}. ${"word ".repeat(30).trim()}`,
    );
    const text = paragraphs.join("\n\n");
    const parts = splitMessage(text, 500);
    for (const part of parts.slice(0, -1)) {
      expect(part.endsWith("\n\n")).toBe(true);
      expect(part.length).toBeGreaterThanOrEqual(250);
    }
    expect(parts.join("")).toBe(text);
  });

  it("prefers to end a part before a code block rather than cut into it", () => {
    const prose = "Intro line.\n\nHere is the code:\n";
    const code = `\`\`\`js\n${"x();\n".repeat(60)}\`\`\``;
    const parts = splitMessage(`${prose}${code}`, 200);
    expect(parts[0]).toBe(prose);
    expect(parts[1]?.startsWith("```js\n")).toBe(true);
  });

  it("closes and reopens (with its language) a single code block larger than a message", () => {
    const code = `\`\`\`ts\n${Array.from({ length: 300 }, (_, index) => `line(${index});`).join("\n")}\n\`\`\``;
    const parts = splitMessage(code, 500);
    expect(parts.length).toBeGreaterThan(5);
    for (const [index, part] of parts.entries()) {
      expect(part.startsWith("```ts\n")).toBe(true);
      expect(part.endsWith("\n```")).toBe(true);
      expect(part.length).toBeLessThanOrEqual(500);
      if (index > 0) expect(part).not.toMatch(/^```ts\n```/);
    }
    expect(reassemble(parts)).toBe(code);
  });

  it("cuts a line longer than a message at a space, and hard only when there is none", () => {
    const words = "lorem ipsum ".repeat(100).trim();
    const parts = splitMessage(words, 100);
    for (const part of parts) expect(part.length).toBeLessThanOrEqual(100);
    for (const part of parts.slice(0, -1)) expect(part.endsWith(" ")).toBe(true);
    expect(parts.join("")).toBe(words);
    const blob = "x".repeat(250);
    expect(splitMessage(blob, 100)).toEqual(["x".repeat(100), "x".repeat(100), "x".repeat(50)]);
  });

  it("never separates a surrogate pair", () => {
    const emoji = "😀".repeat(100);
    const parts = splitMessage(emoji, 51);
    for (const part of parts) {
      expect(part.length).toBeLessThanOrEqual(51);
      expect(part).not.toMatch(/^[\uDC00-\uDFFF]|[\uD800-\uDBFF]$/);
    }
    expect(parts.join("")).toBe(emoji);
  });

  it("closes a code block the text never closed", () => {
    const parts = splitMessage(`text\n\n\`\`\`sh\n${"echo hi\n".repeat(40)}`, 120);
    for (const part of parts) {
      expect(part.length).toBeLessThanOrEqual(120);
      expect(fenceState(part).open).toBeUndefined();
    }
  });

  it("rejects a limit too small to hold a reopened code block", () => {
    expect(() => splitMessage("text", MIN_SPLIT_CHARS - 1)).toThrow(RangeError);
  });
});
