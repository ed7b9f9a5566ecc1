import { execFileSync } from "node:child_process";
import { chmod, link, lstat, mkdir, readFile, stat, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  editFileTool,
  listFilesTool,
  readFileTool,
  resolveInWorkspace,
  workspaceDirFor,
  writeFileTool,
} from "../../src/tools/index.js";
import { call, tempDir, textOf } from "./helpers.js";

let root: string;
let workspace: string;
let outside: string;
let cleanup: () => Promise<void>;

beforeEach(async () => {
  ({ dir: root, cleanup } = await tempDir("files"));
  workspace = join(root, "workspace");
  outside = join(root, "outside");
  await mkdir(workspace);
  await mkdir(outside);
  await writeFile(join(outside, "secret.txt"), "top secret");
});

afterEach(async () => {
  await cleanup();
});

const run = (tool: Parameters<typeof call>[0], args: Record<string, unknown>) =>
  call(tool, args, { workspaceDir: workspace });

describe("workspace file tools", () => {
  it("write, read, edit and list files inside the workspace", async () => {
    expect(
      textOf(await run(writeFileTool(), { path: "notes/plan.md", content: "step one\nstep two\n" })),
    ).toBe("Wrote 18 bytes to notes/plan.md.");
    expect(textOf(await run(readFileTool(), { path: "notes/plan.md" }))).toBe("step one\nstep two\n");
    expect(
      textOf(await run(editFileTool(), { path: "notes/plan.md", oldText: "step two", newText: "step 2" })),
    ).toBe("Replaced 1 occurrence in notes/plan.md.");
    expect(await readFile(join(workspace, "notes/plan.md"), "utf8")).toBe("step one\nstep 2\n");
    await run(writeFileTool(), { path: "a.txt", content: "a" });
    expect(textOf(await run(listFilesTool(), {}))).toBe("a.txt\nnotes/");
    expect(textOf(await run(listFilesTool(), { recursive: true }))).toBe("a.txt\nnotes/\nnotes/plan.md");
  });

  it("reads long files in parts and says how to get the rest", async () => {
    const lines = Array.from({ length: 30 }, (_, i) => `line ${i + 1}`).join("\n");
    await writeFile(join(workspace, "long.txt"), lines);
    const text = textOf(await run(readFileTool(), { path: "long.txt", offset: 11, limit: 5 }));
    expect(text).toBe(
      "line 11\nline 12\nline 13\nline 14\nline 15\n\n[lines 11–15 of 30; call read_file with offset=16 for more]",
    );
  });

  it("edit_file refuses missing and ambiguous text with a sentence the model can act on", async () => {
    await writeFile(join(workspace, "dup.txt"), "x = 1\nx = 1\n");
    await expect(run(editFileTool(), { path: "dup.txt", oldText: "y", newText: "z" })).rejects.toThrow(
      "oldText was not found in dup.txt. Read the file and copy the text exactly.",
    );
    await expect(
      run(editFileTool(), { path: "dup.txt", oldText: "x = 1", newText: "x = 2" }),
    ).rejects.toThrow(/occurs 2 times/);
    await run(editFileTool(), { path: "dup.txt", oldText: "x = 1", newText: "x = 2", replaceAll: true });
    expect(await readFile(join(workspace, "dup.txt"), "utf8")).toBe("x = 2\nx = 2\n");
  });

  it("reports missing and binary files readably", async () => {
    await expect(run(readFileTool(), { path: "nope.txt" })).rejects.toThrow(
      '"nope.txt" does not exist in the workspace.',
    );
    await writeFile(join(workspace, "blob.bin"), Buffer.from([1, 2, 0, 3]));
    await expect(run(readFileTool(), { path: "blob.bin" })).rejects.toThrow(/binary file/);
  });

  it.each([
    ["a parent-directory escape", "../outside/secret.txt"],
    ["a deep escape", "notes/../../outside/secret.txt"],
    ["an absolute path", "/etc/passwd"],
  ])("refuses %s", async (_name, path) => {
    await expect(run(readFileTool(), { path })).rejects.toThrow(/outside this thread's workspace/);
    await expect(run(writeFileTool(), { path, content: "pwned" })).rejects.toThrow(
      /outside this thread's workspace/,
    );
    expect(await readFile(join(outside, "secret.txt"), "utf8")).toBe("top secret");
  });

  it("refuses a symlinked file that points outside, for reading and for writing", async () => {
    await symlink(join(outside, "secret.txt"), join(workspace, "link.txt"));
    await expect(run(readFileTool(), { path: "link.txt" })).rejects.toThrow(
      /outside this thread's workspace/,
    );
    await expect(run(writeFileTool(), { path: "link.txt", content: "pwned" })).rejects.toThrow(/outside/);
    await expect(run(editFileTool(), { path: "link.txt", oldText: "top", newText: "no" })).rejects.toThrow(
      /outside/,
    );
    expect(await readFile(join(outside, "secret.txt"), "utf8")).toBe("top secret");
  });

  it("refuses a symlinked directory that points outside, even for new files below it", async () => {
    await symlink(outside, join(workspace, "escape"), "dir");
    await expect(run(writeFileTool(), { path: "escape/new.txt", content: "pwned" })).rejects.toThrow(
      /outside/,
    );
    await expect(run(writeFileTool(), { path: "escape/deeper/new.txt", content: "x" })).rejects.toThrow(
      /outside/,
    );
    await expect(run(listFilesTool(), { path: "escape" })).rejects.toThrow(/outside/);
    await expect(readFile(join(outside, "new.txt"), "utf8")).rejects.toThrow(/ENOENT/);
  });

  it("follows links that stay inside the workspace, and lists links without following them", async () => {
    await writeFile(join(workspace, "real.txt"), "inside");
    await symlink(join(workspace, "real.txt"), join(workspace, "alias.txt"));
    await symlink(outside, join(workspace, "escape"), "dir");
    expect(textOf(await run(readFileTool(), { path: "alias.txt" }))).toBe("inside");
    expect(textOf(await run(listFilesTool(), { recursive: true }))).toBe(
      "alias.txt (link)\nescape (link)\nreal.txt",
    );
  });

  it("refuses a dangling link", async () => {
    await symlink(join(outside, "not-yet.txt"), join(workspace, "dangling.txt"));
    await expect(run(writeFileTool(), { path: "dangling.txt", content: "x" })).rejects.toThrow(
      /points nowhere/,
    );
    await expect(readFile(join(outside, "not-yet.txt"), "utf8")).rejects.toThrow(/ENOENT/);
  });

  it("refuses a FIFO (and other non-regular files) at once instead of waiting for a writer", async () => {
    execFileSync("mkfifo", [join(workspace, "pipe")]);
    await expect(run(readFileTool(), { path: "pipe" })).rejects.toThrow(
      '"pipe" is a named pipe (FIFO); only regular files can be read.',
    );
    await expect(run(editFileTool(), { path: "pipe", oldText: "a", newText: "b" })).rejects.toThrow(
      /named pipe/,
    );
    // Writing replaces the pipe with a regular file rather than blocking on it.
    expect(textOf(await run(writeFileTool(), { path: "pipe", content: "now a file" }))).toBe(
      "Wrote 10 bytes to pipe.",
    );
    expect((await lstat(join(workspace, "pipe"))).isFile()).toBe(true);
    expect(textOf(await run(readFileTool(), { path: "pipe" }))).toBe("now a file");
  }, 5_000);

  it("cannot read or change a file outside through a hard link inside the workspace", async () => {
    await link(join(outside, "secret.txt"), join(workspace, "linked.txt"));
    await expect(run(readFileTool(), { path: "linked.txt" })).rejects.toThrow(
      '"linked.txt" has 2 hard links, so it may be a file from outside the workspace; it is not read.',
    );
    await expect(run(editFileTool(), { path: "linked.txt", oldText: "top", newText: "no" })).rejects.toThrow(
      /hard links/,
    );
    // write_file replaces the workspace's name with a new file; the outside file is untouched.
    await run(writeFileTool(), { path: "linked.txt", content: "mine" });
    expect(await readFile(join(outside, "secret.txt"), "utf8")).toBe("top secret");
    expect(await readFile(join(workspace, "linked.txt"), "utf8")).toBe("mine");
    expect(textOf(await run(readFileTool(), { path: "linked.txt" }))).toBe("mine");
  });

  it("keeps a file's permissions when it is rewritten, and leaves no temporary files", async () => {
    await writeFile(join(workspace, "run.sh"), "echo one\n");
    await chmod(join(workspace, "run.sh"), 0o755);
    await run(editFileTool(), { path: "run.sh", oldText: "one", newText: "two" });
    expect((await stat(join(workspace, "run.sh"))).mode & 0o777).toBe(0o755);
    expect(await readFile(join(workspace, "run.sh"), "utf8")).toBe("echo two\n");
    await run(writeFileTool(), { path: "new.txt", content: "x" });
    expect((await stat(join(workspace, "new.txt"))).mode & 0o777).toBe(0o600);
    expect(textOf(await run(listFilesTool(), {}))).toBe("new.txt\nrun.sh");
  });

  it("gives every thread its own directory name, safe for any file system", async () => {
    const a = workspaceDirFor(root, "slack:T1:C1:1700000000.000100");
    const b = workspaceDirFor(root, "slack:T1:C1:1700000000.000101");
    expect(a).not.toBe(b);
    expect(a.startsWith(root)).toBe(true);
    expect(a.slice(root.length + 1)).toMatch(/^[A-Za-z0-9_.-]+$/);
    expect(workspaceDirFor(root, "../../etc")).toMatch(new RegExp(`^${root}/[^/]+$`));
    const resolved = await resolveInWorkspace(a, "x/../y.txt");
    expect(resolved.display).toBe("y.txt");
  });
});
