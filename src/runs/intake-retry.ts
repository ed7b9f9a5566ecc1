import type { IncomingMessage } from "../chat/index.js";
import type { Intake, SubmitResult } from "./intake.js";
import type { RunLogger } from "./setup.js";

/**
 * How the gateway keeps trying to store a message while Redis is away (a restart, a failover). Retrying
 * is safe: intake is idempotent per message id (docs/architecture.md §4, invariant 4).
 */
export interface IntakeRetryPolicy {
  /** No attempt starts later than this after the first one, ms. Default 30,000. */
  giveUpAfterMs: number;
  /** Wait before the second attempt, ms; doubled after every failed attempt. Default 200. */
  firstDelayMs: number;
  /** Longest wait between two attempts, ms. Default 5,000. */
  maxDelayMs: number;
}

/** The default {@link IntakeRetryPolicy}. */
export const DEFAULT_INTAKE_RETRY: Readonly<IntakeRetryPolicy> = {
  giveUpAfterMs: 30_000,
  firstDelayMs: 200,
  maxDelayMs: 5_000,
};

/** What storing a message came to: the intake's decision, or `failed` once every attempt failed. */
export type DurableSubmitResult = SubmitResult | { kind: "failed"; attempts: number; error: unknown };

/** How many given-up message ids a gateway remembers (so platform redeliveries stay given up). */
const GIVEN_UP_CAPACITY = 10_000;

/**
 * {@link Intake.submit} retried with bounded exponential backoff until it answers or the policy gives up.
 * Each failed attempt is logged (warn) with the message id; giving up is final within this process: a
 * later delivery of the same message (a platform retry) is answered `failed` at once, because the person
 * was already told to send it again. Never rejects.
 */
export class DurableSubmit {
  private readonly givenUp = new Set<string>();

  constructor(
    private readonly intake: Intake,
    private readonly policy: IntakeRetryPolicy,
    private readonly log: RunLogger,
  ) {}

  async submit(message: IncomingMessage): Promise<DurableSubmitResult> {
    const key = `${message.thread.platform}:${message.thread.channel}:${message.id}`;
    if (this.givenUp.has(key)) return { kind: "failed", attempts: 0, error: undefined };
    const started = Date.now();
    let delay = this.policy.firstDelayMs;
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.intake.submit(message);
      } catch (error) {
        const fields = { messageId: message.id, thread: message.thread.thread, attempt, err: error };
        if (Date.now() - started + delay > this.policy.giveUpAfterMs) {
          this.remember(key);
          return { kind: "failed", attempts: attempt, error };
        }
        this.log.warn({ ...fields, retryInMs: delay }, "could not store a message; retrying");
        await new Promise((resolve) => setTimeout(resolve, delay));
        delay = Math.min(delay * 2, this.policy.maxDelayMs);
      }
    }
  }

  private remember(key: string): void {
    if (this.givenUp.size >= GIVEN_UP_CAPACITY) {
      const oldest = this.givenUp.values().next();
      if (!oldest.done) this.givenUp.delete(oldest.value);
    }
    this.givenUp.add(key);
  }
}
