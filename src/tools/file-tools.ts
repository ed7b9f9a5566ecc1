import type { Dirent } from "node:fs";
import { type FileHandle, readdir } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import { type AnyToolDefinition, defineTool, ToolError } from "./define-tool.js";
import { wholeNumberSetting, withDefaults } from "./setting-schemas.js";
import { openForReading, replaceInWorkspace, resolveInWorkspace, type WorkspacePath } from "./workspace.js";

/** Limits of the workspace file tools (`builtinTools.files` in the config module). */
export const fileToolsSettingsSchema = z.strictObject({
  /** Largest file `read_file` / `edit_file` read, in bytes. Default 1 MiB. */
  maxReadBytes: wholeNumberSetting("1048576").optional(),
  /** Most characters `read_file` returns in one call. Default 50 000. */
  maxOutputChars: wholeNumberSetting("50000").optional(),
  /** Most entries `list_files` returns. Default 500. */
  maxEntries: wholeNumberSetting("500").optional(),
});

/** See {@link fileToolsSettingsSchema}. */
export type FileToolsOptions = z.infer<typeof fileToolsSettingsSchema>;

const DEFAULTS = { maxReadBytes: 1024 * 1024, maxOutputChars: 50_000, maxEntries: 500 };

function errno(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | undefined)?.code;
}

/** Translates file-system failures into sentences the model can act on. */
function fsFailure(err: unknown, target: WorkspacePath): never {
  if (err instanceof ToolError) throw err;
  switch (errno(err)) {
    case "ENOENT":
      throw new ToolError(`"${target.display}" does not exist in the workspace.`);
    case "EISDIR":
      throw new ToolError(`"${target.display}" is a directory; use list_files.`);
    case "ENOTDIR":
      throw new ToolError(`A part of "${target.display}" is a file, not a directory.`);
    case "ELOOP":
      throw new ToolError(`"${target.display}" is a symbolic link; links are not followed.`);
    case "EACCES":
    case "EPERM":
      throw new ToolError(`Permission denied for "${target.display}".`);
    default:
      throw err;
  }
}

async function readText(target: WorkspacePath, maxBytes: number): Promise<string> {
  let handle: FileHandle | undefined;
  try {
    handle = await openForReading(target);
    const stat = await handle.stat();
    if (stat.size > maxBytes)
      throw new ToolError(
        `"${target.display}" is ${stat.size} bytes, more than the ${maxBytes} bytes allowed.`,
      );
    const bytes = await handle.readFile();
    if (bytes.subarray(0, 8192).includes(0))
      throw new ToolError(
        `"${target.display}" is a binary file (${bytes.length} bytes); only text can be read.`,
      );
    return bytes.toString("utf8");
  } catch (err) {
    return fsFailure(err, target);
  } finally {
    await handle?.close();
  }
}

async function writeText(target: WorkspacePath, content: string): Promise<void> {
  try {
    await replaceInWorkspace(target, content);
  } catch (err) {
    fsFailure(err, target);
  }
}

function countOccurrences(text: string, needle: string): number {
  let count = 0;
  for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + needle.length)) count++;
  return count;
}

/** `read_file`: a text file from the thread's workspace, by line range. */
export function readFileTool(options: FileToolsOptions = {}): AnyToolDefinition {
  const { maxReadBytes, maxOutputChars } = withDefaults(DEFAULTS, options);
  return defineTool({
    name: "read_file",
    description:
      "Read a text file from this thread's workspace. Paths are relative to the workspace. Long files are returned in parts: pass offset (first line, 1-based) and limit (number of lines).",
    parameters: z.object({
      path: z.string().describe("File path relative to the workspace"),
      offset: z.number().int().min(1).optional().describe("First line to return (1-based)"),
      limit: z.number().int().min(1).optional().describe("Number of lines to return (default 2000)"),
    }),
    async execute({ path, offset, limit }, ctx) {
      const target = await resolveInWorkspace(ctx.workspaceDir, path);
      const lines = (await readText(target, maxReadBytes)).split("\n");
      const first = (offset ?? 1) - 1;
      if (first >= lines.length && lines.length > 0)
        throw new ToolError(`"${target.display}" has only ${lines.length} lines.`);
      let last = Math.min(lines.length, first + (limit ?? 2000));
      let text = lines.slice(first, last).join("\n");
      if (text.length > maxOutputChars) {
        text = text.slice(0, maxOutputChars);
        last = first + text.split("\n").length;
      }
      if (first === 0 && last >= lines.length) return text;
      return `${text}\n\n[lines ${first + 1}–${last} of ${lines.length}; call read_file with offset=${last + 1} for more]`;
    },
  });
}

/** `write_file`: creates or replaces a text file (parent directories included). */
export function writeFileTool(): AnyToolDefinition {
  return defineTool({
    name: "write_file",
    description:
      "Create or overwrite a text file in this thread's workspace (missing directories are created). Paths are relative to the workspace.",
    parameters: z.object({
      path: z.string().describe("File path relative to the workspace"),
      content: z.string().describe("The complete new content of the file"),
    }),
    async execute({ path, content }, ctx) {
      const target = await resolveInWorkspace(ctx.workspaceDir, path);
      await writeText(target, content);
      return `Wrote ${Buffer.byteLength(content)} bytes to ${target.display}.`;
    },
  });
}

/** `edit_file`: replaces an exact piece of text in a file. */
export function editFileTool(options: FileToolsOptions = {}): AnyToolDefinition {
  const { maxReadBytes } = withDefaults(DEFAULTS, options);
  return defineTool({
    name: "edit_file",
    description:
      "Replace an exact piece of text in a workspace file. oldText must match the file exactly (whitespace included) and, unless replaceAll is true, occur exactly once.",
    parameters: z.object({
      path: z.string().describe("File path relative to the workspace"),
      oldText: z.string().min(1).describe("The exact text to replace"),
      newText: z.string().describe("The replacement text"),
      replaceAll: z.boolean().optional().describe("Replace every occurrence (default false)"),
    }),
    async execute({ path, oldText, newText, replaceAll }, ctx) {
      const target = await resolveInWorkspace(ctx.workspaceDir, path);
      const text = await readText(target, maxReadBytes);
      const count = countOccurrences(text, oldText);
      if (count === 0)
        throw new ToolError(
          `oldText was not found in ${target.display}. Read the file and copy the text exactly.`,
        );
      if (count > 1 && !replaceAll)
        throw new ToolError(
          `oldText occurs ${count} times in ${target.display}; include more surrounding text or set replaceAll.`,
        );
      await writeText(target, text.split(oldText).join(newText));
      return `Replaced ${count === 1 ? "1 occurrence" : `${count} occurrences`} in ${target.display}.`;
    },
  });
}

/** `list_files`: the entries of a workspace directory (optionally recursive; links are not followed). */
export function listFilesTool(options: FileToolsOptions = {}): AnyToolDefinition {
  const { maxEntries } = withDefaults(DEFAULTS, options);
  return defineTool({
    name: "list_files",
    description:
      'List files in this thread\'s workspace. Directories end with "/". Paths are relative to the workspace; the default is the workspace itself.',
    parameters: z.object({
      path: z.string().optional().describe('Directory relative to the workspace (default ".")'),
      recursive: z.boolean().optional().describe("Include subdirectories (default false)"),
    }),
    async execute({ path, recursive }, ctx) {
      const target = await resolveInWorkspace(ctx.workspaceDir, path ?? ".");
      const out: string[] = [];
      let truncated = false;
      const walk = async (dir: string, prefix: string, depth: number): Promise<void> => {
        let entries: Dirent[];
        try {
          entries = await readdir(dir, { withFileTypes: true });
        } catch (err) {
          fsFailure(err, target);
        }
        entries.sort((a, b) => a.name.localeCompare(b.name));
        for (const entry of entries) {
          if (out.length >= maxEntries) {
            truncated = true;
            return;
          }
          const name = `${prefix}${entry.name}`;
          if (entry.isDirectory()) {
            out.push(`${name}/`);
            if (recursive && depth < 20) await walk(join(dir, entry.name), `${name}/`, depth + 1);
          } else {
            out.push(entry.isSymbolicLink() ? `${name} (link)` : name);
          }
        }
      };
      await walk(target.absolute, "", 0);
      if (out.length === 0) return `${target.display} is empty.`;
      return truncated
        ? `${out.join("\n")}\n[only the first ${maxEntries} entries are shown]`
        : out.join("\n");
    },
  });
}

/** The four workspace file tools. */
export function fileTools(options: FileToolsOptions = {}): AnyToolDefinition[] {
  return [readFileTool(options), writeFileTool(), listFilesTool(options), editFileTool(options)];
}
