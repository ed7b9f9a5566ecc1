import { describeProviderFailure, type FailureContext, StreamIdleTimeoutError } from "./provider-errors.js";

/**
 * The signal one model request runs under: aborted when the caller aborts, or when the stream sends no
 * bytes for `idleMs` after {@link touch} was first called. Call {@link dispose} when the request is over.
 */
export class RequestSignal {
  readonly signal: AbortSignal | undefined;
  /** True once the idle timer aborted the request. */
  idleFired = false;
  private readonly controller: AbortController | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly forward: (() => void) | undefined;

  constructor(
    private readonly caller: AbortSignal | undefined,
    private readonly idleMs: number | undefined,
  ) {
    const controller = new AbortController();
    this.controller = controller;
    this.signal = controller.signal;
    if (caller) {
      this.forward = () => controller.abort(caller.reason);
      // A caller that aborted already (during a retry's wait) fires no "abort" event any more.
      if (caller.aborted) controller.abort(caller.reason);
      else caller.addEventListener("abort", this.forward, { once: true });
    }
  }

  /** Starts or restarts the idle timer (call on every piece of the body, comments included). */
  touch(): void {
    if (this.idleMs === undefined) return;
    if (this.timer) {
      this.timer.refresh();
      return;
    }
    this.timer = setTimeout(() => {
      this.idleFired = true;
      this.controller?.abort();
    }, this.idleMs);
  }

  /** Aborts the request on purpose (e.g. an answer over its size cap); not an idle or caller abort. */
  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.controller?.abort();
  }

  /** The user-facing sentence for an idle abort. */
  idleMessage(failure: FailureContext): string {
    return describeProviderFailure(new StreamIdleTimeoutError(this.idleMs ?? 0), failure).message;
  }

  dispose(): void {
    if (this.timer) clearTimeout(this.timer);
    if (this.forward) this.caller?.removeEventListener("abort", this.forward);
  }
}
