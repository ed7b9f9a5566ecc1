import { createHash, randomBytes } from "node:crypto";
import { constants, type Stats } from "node:fs";
import { type FileHandle, lstat, mkdir, open, readlink, realpath, rename, unlink } from "node:fs/promises";
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
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

/** What an opened file is, in the words the model reads, when it is not a regular file. */
function kindOf(stat: Stats): string {
  if (stat.isFIFO()) return "a named pipe (FIFO)";
  if (stat.isSocket()) return "a socket";
  if (stat.isCharacterDevice() || stat.isBlockDevice()) return "a device";
  return "not a regular file";
}

/**
 * Opens a checked workspace file for reading, and only a plain file that is surely the workspace's own:
 * - without following a symlink in the final component (`O_NOFOLLOW`), and without blocking
 *   (`O_NONBLOCK`: opening a FIFO would otherwise wait forever for a writer);
 * - a directory, FIFO, socket or device is refused;
 * - a regular file with more than one hard link is refused: its other name may be outside the workspace
 *   (a link made there and seen here), and the inode cannot tell which name is "real";
 * - on Linux, the opened file's real path (`/proc/self/fd`) must still be inside the workspace, so a
 *   directory swapped for a symlink between the check and the open is caught.
 * @throws ToolError with a readable reason (ENOENT and friends are thrown as they are).
 */
export async function openForReading(target: WorkspacePath): Promise<FileHandle> {
  const handle = await open(
    target.absolute,
    constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK,
  );
  try {
    const stat = await handle.stat();
    if (stat.isDirectory()) throw new ToolError(`"${target.display}" is a directory; use list_files.`);
    if (!stat.isFile())
      throw new ToolError(`"${target.display}" is ${kindOf(stat)}; only regular files can be read.`);
    if (stat.nlink > 1)
      throw new ToolError(
        `"${target.display}" has ${stat.nlink} hard links, so it may be a file from outside the workspace; it is not read.`,
      );
    const real = await readlink(`/proc/self/fd/${handle.fd}`).catch(() => undefined);
    if (real !== undefined && !isInside(target.root, real)) throw outside(target.display);
    return handle;
  } catch (err) {
    await handle.close();
    throw err;
  }
}

/**
 * Replaces a checked workspace file with `content`, atomically: the text goes to a new temporary file
 * in the same directory (`O_EXCL | O_NOFOLLOW`), which is then renamed over the target. So the target's
 * old inode is never written through — not when it is a hard link to a file outside the workspace, a
 * FIFO (no hang), or a symlink swapped in after the check — and readers never see half a file. A regular
 * file keeps its permission bits; a new one gets 0600. Parent directories are created.
 * @throws ToolError when the target is a directory or its parent is outside the workspace.
 */
export async function replaceInWorkspace(target: WorkspacePath, content: string): Promise<void> {
  const dir = dirname(target.absolute);
  await mkdir(dir, { recursive: true });
  // The parent may have been created through a path we checked; re-check its real location.
  if (!isInside(target.root, await realpath(dir))) throw outside(target.display);
  let mode = 0o600;
  const existing = await lstat(target.absolute).catch(() => undefined);
  if (existing?.isDirectory()) throw new ToolError(`"${target.display}" is a directory; use list_files.`);
  if (existing?.isFile()) mode = existing.mode & 0o777;
  const temp = join(dir, `.${basename(target.absolute)}.${randomBytes(6).toString("hex")}.tmp`);
  const handle = await open(
    temp,
    constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
    0o600,
  );
  try {
    await handle.writeFile(content, "utf8");
    await handle.chmod(mode);
    await handle.close();
    await rename(temp, target.absolute);
  } catch (err) {
    await handle.close().catch(() => {});
    await unlink(temp).catch(() => {});
    throw err;
  }
}
