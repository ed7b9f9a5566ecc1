import type { InterruptNotice } from "./types.js";

/** An interruptible tool's result text when a new message aborted it (docs/agent-loop.md, deviation 6). */
export function interruptedToolText(notice: InterruptNotice | undefined): string {
  const from = notice?.by ? ` from ${notice.by}` : "";
  return `Interrupted by a new message${from}; the tool was stopped before it finished.`;
}

/** The {@link InterruptNotice} an aborted signal carries (an empty one when its reason is something else). */
export function noticeOf(signal: AbortSignal): InterruptNotice {
  const reason: unknown = signal.reason;
  if (reason !== null && typeof reason === "object" && !(reason instanceof Error)) {
    const by = (reason as { by?: unknown }).by;
    return typeof by === "string" ? { by } : {};
  }
  return {};
}

/**
 * A signal that aborts when any of `signals` does (with that signal's reason), and `dispose` to detach
 * its listeners once the operation it guards is over. Works on every Node 20 (no `AbortSignal.any`).
 */
export function linkSignals(...signals: (AbortSignal | undefined)[]): {
  signal: AbortSignal | undefined;
  dispose: () => void;
} {
  const present = signals.filter((signal): signal is AbortSignal => signal !== undefined);
  if (present.length <= 1) return { signal: present[0], dispose: () => {} };
  const controller = new AbortController();
  const already = present.find((signal) => signal.aborted);
  if (already) {
    controller.abort(already.reason);
    return { signal: controller.signal, dispose: () => {} };
  }
  const listeners = present.map((signal) => {
    const listener = () => controller.abort(signal.reason);
    signal.addEventListener("abort", listener, { once: true });
    return [signal, listener] as const;
  });
  const dispose = () => {
    for (const [signal, listener] of listeners) signal.removeEventListener("abort", listener);
  };
  controller.signal.addEventListener("abort", dispose, { once: true });
  return { signal: controller.signal, dispose };
}

/**
 * The signal half of an {@link import("./types.js").InterruptSource}: one controller per phase, aborted
 * by {@link InterruptLatch.interrupt} (both phases) or {@link InterruptLatch.steer} (the tools phase only),
 * and replaced by a fresh one when asked for after nothing waits any more. `waiting(phase)` tells the
 * latch whether a message of that phase still waits (the source's own queue state); it must not throw.
 */
export class InterruptLatch {
  private readonly controllers: Record<"stream" | "tools", AbortController> = {
    stream: new AbortController(),
    tools: new AbortController(),
  };

  constructor(private readonly waiting: (phase: "stream" | "tools") => boolean) {}

  /** An interrupt message arrived: aborts the current stream and tools signals. */
  interrupt(notice: InterruptNotice = {}): void {
    this.controllers.stream.abort(notice);
    this.controllers.tools.abort(notice);
  }

  /** A steering message arrived: aborts the current tools signal (interruptible tools yield to it). */
  steer(notice: InterruptNotice = {}): void {
    this.controllers.tools.abort(notice);
  }

  /** The phase's signal: aborted while a message of the phase waits, else one that aborts on the next. */
  signal(phase: "stream" | "tools"): AbortSignal {
    const current = this.controllers[phase];
    if (current.signal.aborted && !this.waiting(phase)) this.controllers[phase] = new AbortController();
    return this.controllers[phase].signal;
  }
}
