import { createHash } from "node:crypto";
import { constants } from "node:fs";
import { lstat, mkdir, open, realpath } from "node:fs/promises";
import { dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { ToolError } from "./define-tool.js";

/**
 * The workspace directory of a thread under `root`: a readable slug of the thread id plus a hash, so
 * distinct threads never share a directory and the name is safe on every file system.
 */
export function workspaceDirFor(root: string, threadId: string): string {
  const slug = threadId
    .replace(/[^A-Za-z0-9_.-]+/g, "_")
    .replace(/^[._]+/, "")
    .slice(0, 60);
  const hash = createHash("sha256").update(threadId).digest("hex").slice(0, 12);
  return join(resolve(root), `${slug || "thread"}-${hash}`);
}

/** Creates the workspace if needed and returns its real path (symlinks in `root` resolved). */
export async function ensureWorkspace(workspaceDir: string): Promise<string> {
  await mkdir(workspaceDir, { recursive: true, mode: 0o700 });
  return realpath(workspaceDir);
}

function isInside(root: string, candidate: string): boolean {
  const rel = relative(root, candidate);
  return rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel));
}

/** The error every escape attempt gets (the model should learn the rule, not the file system layout). */
function outside(path: string): ToolError {
  return new ToolError(
    `"${path}" is outside this thread's workspace. Use paths relative to the workspace, without "..".`,
  );
}

/** A path in the workspace, checked: `absolute` is where to operate, `display` what to tell the model. */
export interface WorkspacePath {
  absolute: string;
  display: string;
  /** The workspace's real path. */
  root: string;
}

/**
 * Resolves a model-supplied path inside the workspace. Refuses absolute paths, `..` escapes and any
 * symlink (at any depth, including the final component) whose target lies outside the workspace.
 * The deepest existing ancestor is resolved with `realpath`, so a symlinked directory cannot smuggle a
 * write outside. Creates the workspace if needed. @throws ToolError with a readable reason.
 */
export async function resolveInWorkspace(workspaceDir: string, path: string): Promise<WorkspacePath> {
  if (path.includes("\0")) throw new ToolError("Paths cannot contain NUL characters.");
  const root = await ensureWorkspace(workspaceDir);
  const requested = path.trim() === "" ? "." : path.trim();
  if (isAbsolute(requested)) throw outside(path);
  const absolute = resolve(root, requested);
  if (!isInside(root, absolute)) throw outside(path);
  // Walk up to the deepest component that exists and resolve every symlink on the way there.
  let existing = absolute;
  for (;;) {
    try {
      await lstat(existing);
      break;
    } catch {
      const parent = dirname(existing);
      if (parent === existing) break;
      existing = parent;
    }
  }
  let real: string;
  try {
    real = await realpath(existing);
  } catch {
    throw new ToolError(`"${path}" is a link that points nowhere.`);
  }
  if (!isInside(root, real)) throw outside(path);
  const display = relative(root, absolute) || ".";
  return { absolute: existing === absolute ? real : join(real, relative(existing, absolute)), display, root };
}

/**
 * Opens a checked workspace file without following a symlink in the final component (closing the gap
 * between the check and the open). Parent directories are created for writes.
 */
export async function openInWorkspace(target: WorkspacePath, mode: "read" | "write") {
  if (mode === "write") {
    await mkdir(dirname(target.absolute), { recursive: true });
    // The parent may have been created through a path we checked; re-check its real location.
    if (!isInside(target.root, await realpath(dirname(target.absolute)))) throw outside(target.display);
    return open(
      target.absolute,
      constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW,
      0o600,
    );
  }
  return open(target.absolute, constants.O_RDONLY | constants.O_NOFOLLOW);
}
