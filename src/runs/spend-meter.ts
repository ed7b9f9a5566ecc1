import { randomUUID } from "node:crypto";
import {
  type AssistantMessage,
  type AssistantMessageEventStream,
  createAssistantMessageEventStream,
  emptyUsage,
  failureMessage,
  type StreamFn,
} from "../agent/index.js";
import { formatCost, formatCount } from "../chat/index.js";
import { type PriceTable, priceMessage } from "./pricing.js";
import type { RunLogger } from "./setup.js";
import type { CapReached, SpendLedger, SpendTarget } from "./spend.js";

/** What a {@link SpendMeter} reports, besides the ledger. */
export interface SpendMeterOptions {
  ledger: SpendLedger;
  target: SpendTarget;
  prices: PriceTable;
  log: RunLogger;
  /** Called for every priced response: the model asked for and its cost in USD. Must not throw. */
  cost?: (model: string, usd: number) => void;
  /** Called once a cap is reached, by this run's request or another worker's. Must not throw. */
  capReached: (reason: string) => void;
  /** Log fields naming the run. */
  fields: Record<string, unknown>;
}

/**
 * Puts one run's model requests through the spend ledger: before each request it reserves room under the
 * daily caps (a used-up cap answers with an error message naming it instead of calling the model), after
 * each it prices the response (provider's cost, else the price table) and adds it to the thread, user,
 * channel and workspace counters. When Redis does not answer, requests go ahead (logged): an unreachable
 * Redis must not also stop every run's answer.
 */
export class SpendMeter {
  /** Accounting of uncapped requests still being written (see {@link settled}). */
  private readonly recording = new Set<Promise<void>>();

  constructor(private readonly options: SpendMeterOptions) {}

  /**
   * `streamFn` with admission before and accounting after every request. Without caps nothing is admitted
   * and nothing waits: the model's own stream is returned untouched (no second queue per event) and each
   * response is recorded once it is done, in the background ({@link settled} awaits those writes).
   */
  wrap(streamFn: StreamFn): StreamFn {
    return (model, context, streamOptions) => {
      if (!this.options.ledger.capped) {
        const stream = streamFn(model, context, streamOptions);
        return stream instanceof Promise
          ? stream.then((s) => this.recordWhenDone(s))
          : this.recordWhenDone(stream);
      }
      const out = createAssistantMessageEventStream();
      void (async () => {
        const requestId = randomUUID();
        const reached = await this.admit(requestId, streamOptions.signal);
        if (reached) {
          const reason = capReason(reached, this.options.target);
          this.options.capReached(reason);
          const refused: AssistantMessage = {
            role: "assistant",
            content: [],
            api: model.api,
            provider: model.provider,
            model: model.id,
            usage: emptyUsage(),
            stopReason: "error",
            errorMessage: reason,
            timestamp: Date.now(),
          };
          out.push({ type: "error", reason: "error", error: refused });
          return;
        }
        try {
          const inner = await streamFn(model, context, streamOptions);
          for await (const event of inner) {
            if (event.type === "done") await this.settle(requestId, event.message);
            else if (event.type === "error") await this.settle(requestId, event.error);
            out.push(event);
          }
        } catch (err) {
          await this.release(requestId);
          const failed = failureMessage(model, err, streamOptions.signal?.aborted ?? false);
          out.push({
            type: "error",
            reason: failed.stopReason === "aborted" ? "aborted" : "error",
            error: failed,
          });
        }
      })();
      return out;
    };
  }

  /** Resolves once every background write of {@link wrap}'s uncapped path is done. Never rejects. */
  async settled(): Promise<void> {
    while (this.recording.size > 0) await Promise.all([...this.recording]);
  }

  private recordWhenDone(stream: AssistantMessageEventStream): AssistantMessageEventStream {
    void stream.result().then((message) => {
      // No reservation to drop, so no request id: the ledger only adds the use.
      const writing = this.settle(undefined, message).finally(() => this.recording.delete(writing));
      this.recording.add(writing);
    });
    return stream;
  }

  private async admit(requestId: string, signal: AbortSignal | undefined): Promise<CapReached | undefined> {
    const { ledger, target } = this.options;
    if (!ledger.capped) return undefined;
    try {
      return await ledger.admit(target, requestId, signal);
    } catch (err) {
      this.options.log.warn({ ...this.options.fields, err }, "spend caps not checked (Redis error)");
      return undefined;
    }
  }

  /** Prices `message` and adds it to the counters; `requestId`: the reservation to drop (none when undefined). */
  private async settle(requestId: string | undefined, message: AssistantMessage): Promise<void> {
    const { ledger, target } = this.options;
    const usd = priceMessage(message, this.options.prices) ?? 0;
    if (usd > 0) this.options.cost?.(message.model, usd);
    const usage = message.usage;
    const tokens = usage.input + usage.cacheRead + usage.cacheWrite + usage.output;
    try {
      if (tokens === 0 && usd === 0) {
        // Nothing to add; only a reservation, if any, to drop.
        if (requestId !== undefined) await ledger.release(target, requestId);
        return;
      }
      const reached = await ledger.settle(target, requestId, tokens, usd);
      if (reached) this.options.capReached(capReason(reached, target));
    } catch (err) {
      this.options.log.warn({ ...this.options.fields, err }, "spend not recorded (Redis error)");
    }
  }

  private async release(requestId: string): Promise<void> {
    try {
      await this.options.ledger.release(this.options.target, requestId);
    } catch {
      // The reservation expires on its own.
    }
  }
}

const SCOPE_WORDS = {
  thread: () => "this thread",
  user: (target: SpendTarget) => target.requester.name,
  channel: () => "this channel",
  workspace: (target: SpendTarget) =>
    target.thread.platform === "discord" ? "this server" : "this workspace",
} as const;

/**
 * One sentence for the chat naming the cap and when it resets: "The daily budget of $5 for this channel is
 * used up ($5.02 today), so this run stopped. It resets at 00:00 UTC (in 3 h 12 min)."
 */
export function capReason(reached: CapReached, target: SpendTarget, now = Date.now()): string {
  const amount = (value: number) =>
    reached.unit === "usd" ? formatCost(value) : `${formatCount(value)} tokens`;
  const who = SCOPE_WORDS[reached.scope](target);
  const left = Math.max(0, reached.resetsAt - now);
  const hours = Math.floor(left / 3_600_000);
  const minutes = Math.ceil((left % 3_600_000) / 60_000);
  const inText = hours > 0 ? `${hours} h ${minutes} min` : `${minutes} min`;
  return `The daily budget of ${amount(reached.limit)} for ${who} is used up (${amount(reached.used)} today), so this run stopped. It resets at 00:00 UTC (in ${inText}).`;
}
