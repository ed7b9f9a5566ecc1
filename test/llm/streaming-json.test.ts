import { describe, expect, it } from "vitest";
import { parseStreamingJson, repairJson } from "../../src/llm/streaming-json.js";

describe("parseStreamingJson", () => {
  it("returns {} for empty or whitespace text", () => {
    expect(parseStreamingJson("")).toEqual({});
    expect(parseStreamingJson("   ")).toEqual({});
  });

  it("parses complete objects", () => {
    expect(parseStreamingJson('{"a": 1, "b": [true, null], "c": {"d": "e"}}')).toEqual({
      a: 1,
      b: [true, null],
      c: { d: "e" },
    });
  });

  it("salvages every prefix of an object into an object", () => {
    const full = '{"path": "src/a b.ts", "n": -12.5, "flags": [true, false, null], "nested": {"k": "v\\"q"}}';
    for (let end = 0; end <= full.length; end++) {
      const parsed = parseStreamingJson(full.slice(0, end));
      expect(typeof parsed).toBe("object");
      expect(Array.isArray(parsed)).toBe(false);
    }
    expect(parseStreamingJson(full.slice(0, 18))).toEqual({ path: "src/a b." });
    expect(parseStreamingJson(full)).toEqual(JSON.parse(full));
  });

  it("repairs raw control characters and invalid escapes", () => {
    expect(parseStreamingJson('{"text": "line one\nline two\ttab"}')).toEqual({
      text: "line one\nline two\ttab",
    });
    expect(parseStreamingJson('{"path": "C:\\Users\\me"}')).toEqual({ path: "C:\\Users\\me" });
    expect(parseStreamingJson('{"partial": "a\nb')).toEqual({ partial: "a\nb" });
  });

  it("returns {} for non-objects and garbage", () => {
    expect(parseStreamingJson("[1, 2]")).toEqual({});
    expect(parseStreamingJson('"text"')).toEqual({});
    expect(parseStreamingJson("42")).toEqual({});
    expect(parseStreamingJson("not json at all")).toEqual({});
  });
});

describe("repairJson", () => {
  it("leaves valid JSON untouched (same string)", () => {
    const valid = '{"a": "b\\n\\u00e9\\\\"}';
    expect(repairJson(valid)).toBe(valid);
  });

  it("only touches string contents", () => {
    expect(repairJson('{\n"a": "x\ny"\n}')).toBe('{\n"a": "x\\ny"\n}');
  });
});
