import { execFile } from "node:child_process";
import { accessSync, constants, lstatSync, readlinkSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { delimiter, isAbsolute, join } from "node:path";
import { z } from "zod";
import { flagSetting, textListSetting, textSetting } from "./setting-schemas.js";

/**
 * How the `shell` tool isolates commands: `"bwrap"` (default) runs each one in a bubblewrap sandbox;
 * `"none"` runs it directly on the worker, where it can read the worker's files and its processes'
 * environments (API keys, bot tokens). `"none"` is an explicit operator choice, never a fallback.
 */
export const shellSandboxModeSchema = z.enum(["bwrap", "none"], { error: 'must be "bwrap" or "none"' });

/** See {@link shellSandboxModeSchema}. */
export type ShellSandboxMode = z.infer<typeof shellSandboxModeSchema>;

/** Settings of the bubblewrap sandbox (part of `builtinTools.shell` in the config module). */
export const bwrapSandboxSettingsSchema = z.strictObject({
  /** The `bwrap` binary: an absolute path, or a name looked up on the worker's PATH. Default `"bwrap"`. */
  bwrapPath: textSetting('"/usr/bin/bwrap"').optional(),
  /** Share the worker's network (downloads, git, package managers). `false` = no network at all. Default true. */
  network: flagSetting().optional(),
  /** More host paths commands may read (mounted read-only at the same place), e.g. `["/opt/toolchain"]`. */
  readOnlyPaths: textListSetting('["/opt/toolchain"]').optional(),
});

/** See {@link bwrapSandboxSettingsSchema}. */
export type BwrapSandboxOptions = z.infer<typeof bwrapSandboxSettingsSchema>;

/** A sandbox ready to wrap commands: the resolved binary plus its settings. */
export interface BwrapSandbox extends BwrapSandboxOptions {
  /** Absolute path of the `bwrap` binary. */
  bwrap: string;
}

/** The outcome of {@link probeBwrap}: usable (with the binary), or not (with the reason in plain words). */
export type SandboxProbe = { available: true; sandbox: BwrapSandbox } | { available: false; reason: string };

/** The PATH commands see inside the sandbox (the worker's own PATH may name directories that are not there). */
export const SANDBOX_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/**
 * The `/etc` files programs commonly need (name resolution, users, TLS roots, Debian's alternatives,
 * the dynamic linker's cache, time zone). Everything else in `/etc` (and all of `/home`, `/root`, `/opt`,
 * `/var`, the app's own directory, other threads' workspaces) is not visible.
 */
const ETC_ENTRIES = [
  "alternatives",
  "ca-certificates",
  "ca-certificates.conf",
  "gai.conf",
  "group",
  "host.conf",
  "hostname",
  "hosts",
  "ld.so.cache",
  "ld.so.conf",
  "ld.so.conf.d",
  "localtime",
  "mime.types",
  "nsswitch.conf",
  "os-release",
  "passwd",
  "protocols",
  "resolv.conf",
  "services",
  "ssl",
  "timezone",
];

/** Top-level directories that are symlinks into `/usr` on merged-/usr systems, or directories elsewhere. */
const ROOT_LINKS = ["/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"];

/** The absolute path of `name` on `pathEnv` (or `name` itself when it is a path), if it is executable. */
export function findExecutable(name: string, pathEnv = process.env.PATH ?? ""): string | undefined {
  const candidates = isAbsolute(name)
    ? [name]
    : name.includes("/")
      ? []
      : pathEnv
          .split(delimiter)
          .filter((dir) => dir !== "")
          .map((dir) => join(dir, name));
  for (const candidate of candidates) {
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

let systemView: string[] | undefined;

/** Read-only mounts of the system directories, computed once (the layout does not change at run time). */
function systemViewArgs(): string[] {
  if (systemView) return systemView;
  const args = ["--ro-bind", "/usr", "/usr"];
  for (const path of ROOT_LINKS) {
    try {
      const stat = lstatSync(path);
      if (stat.isSymbolicLink()) args.push("--symlink", readlinkSync(path), path);
      else if (stat.isDirectory()) args.push("--ro-bind", path, path);
    } catch {
      // absent on this system
    }
  }
  for (const entry of ETC_ENTRIES) args.push("--ro-bind-try", `/etc/${entry}`, `/etc/${entry}`);
  systemView = args;
  return args;
}

/**
 * The bwrap arguments that run a command in `workspace`: new PID, IPC, UTS and cgroup namespaces (the
 * command sees only its own processes and a fresh `/proc`, never the worker's), no capabilities even when
 * the worker is root, a read-only view of `/usr`, `/bin`, `/lib…` and a few `/etc` files, a private empty
 * `/tmp`, minimal `/dev`, the workspace read-write at its own path, and a read-only root. `--die-with-parent`
 * plus the PID namespace mean every process of the command (background and `setsid` ones included) is
 * killed when its shell ends or when bwrap is killed. Append the command after these.
 */
export function bwrapArgs(workspace: string, sandbox: BwrapSandboxOptions = {}): string[] {
  const args = [
    "--die-with-parent",
    "--new-session",
    "--unshare-pid",
    "--unshare-ipc",
    "--unshare-uts",
    "--unshare-cgroup-try",
    "--hostname",
    "threadline-sandbox",
    "--cap-drop",
    "ALL",
  ];
  if (sandbox.network === false) args.push("--unshare-net");
  args.push(...systemViewArgs());
  for (const path of sandbox.readOnlyPaths ?? []) args.push("--ro-bind-try", path, path);
  args.push("--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp");
  args.push("--bind", workspace, workspace, "--chdir", workspace, "--remount-ro", "/");
  return args;
}

/**
 * Checks that bubblewrap is installed and can actually create its namespaces here (containers and
 * hardened kernels may forbid them): runs `/bin/sh -c "exit 0"` in a sandbox over a scratch directory.
 * Never rejects; an unusable sandbox is `{ available: false, reason }`.
 */
export async function probeBwrap(
  options: BwrapSandboxOptions = {},
  pathEnv = process.env.PATH ?? "",
): Promise<SandboxProbe> {
  const name = options.bwrapPath ?? "bwrap";
  const bwrap = findExecutable(name, pathEnv);
  if (!bwrap)
    return {
      available: false,
      reason: `bubblewrap ("${name}") was not found${isAbsolute(name) ? "" : " on PATH"}`,
    };
  const scratch = await mkdtemp(join(tmpdir(), "threadline-sandbox-probe-"));
  try {
    const failure = await new Promise<string | undefined>((resolve) => {
      execFile(
        bwrap,
        [...bwrapArgs(scratch, options), "/bin/sh", "-c", "exit 0"],
        { env: { PATH: SANDBOX_PATH }, timeout: 10_000 },
        (err, _stdout, stderr) => {
          if (!err) return resolve(undefined);
          const said = String(stderr).trim().split("\n").slice(-2).join(" | ");
          resolve(said || err.message);
        },
      );
    });
    if (failure) return { available: false, reason: `bubblewrap cannot create its sandbox here: ${failure}` };
    const sandbox: BwrapSandbox = { bwrap };
    if (options.network !== undefined) sandbox.network = options.network;
    if (options.readOnlyPaths) sandbox.readOnlyPaths = options.readOnlyPaths;
    return { available: true, sandbox };
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}
