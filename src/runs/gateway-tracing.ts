import { type Context, propagation, ROOT_CONTEXT, type Span, SpanKind, trace } from "@opentelemetry/api";
import { type ChatOutbound, type IncomingMessage, threadId } from "../chat/index.js";
import {
  CHAT_METHODS,
  CLIENT,
  delegate,
  failSpan,
  INTERNAL,
  intakesInFlight,
  type TraceCarrier,
  tracer,
  tracingActive,
} from "./tracing-core.js";

/**
 * The gateway side of tracing (src/runs/tracing.ts has the tree of spans): `intake` → `intake.submit` →
 * `run.enqueue`, and the gateway's `chat.<method>` calls. Their parents are found in the intakes in flight in
 * this process, never in an active context.
 */

/** One platform message the gateway of this process is handling, with its span's context. */
interface IntakeTrace {
  thread: string;
  messageId: string;
  span: Span;
  context: Context;
  /** The `intake.submit` span's context, once the intake decision started: `run.enqueue`'s parent. */
  submit: Context | undefined;
}

/**
 * The intake whose `handle` is running its synchronous part right now: what the gateway calls before its first
 * `await` (the 👀 ack, {@link traceSubmit}) belongs to it without a doubt.
 */
let syncIntake: IntakeTrace | undefined;
/**
 * The intakes in flight, by thread id (a thread may have several messages in flight); by message id, their
 * spans are in {@link intakesInFlight} (for log lines).
 */
const intakesByThread = new Map<string, IntakeTrace[]>();

function addIntake(intake: IntakeTrace): void {
  const list = intakesByThread.get(intake.thread);
  if (list) list.push(intake);
  else intakesByThread.set(intake.thread, [intake]);
  intakesInFlight.set(intake.messageId, intake.span);
}

function removeIntake(intake: IntakeTrace): void {
  const list = intakesByThread.get(intake.thread);
  const at = list?.indexOf(intake) ?? -1;
  if (list && at >= 0) list.splice(at, 1);
  if (list?.length === 0) intakesByThread.delete(intake.thread);
  if (intakesInFlight.get(intake.messageId) === intake.span) intakesInFlight.delete(intake.messageId);
}

/** Calls `body` with `intake` as the one whose synchronous part runs ({@link syncIntake}). */
function synchronously<T>(intake: IntakeTrace, body: () => T): T {
  const outer = syncIntake;
  syncIntake = intake;
  try {
    return body();
  } finally {
    syncIntake = outer;
  }
}

/**
 * The parent of a gateway chat call: the intake whose synchronous part makes it; else the intake in flight in
 * the call's thread for the message it names (`args[1]`: react/unreact), else the thread's latest intake in
 * flight; else none (a root: a reaction, a stop, an ack on arrival before the message is handled).
 */
function gatewayParent(args: readonly unknown[]): Context {
  if (syncIntake) return syncIntake.context;
  if (intakesByThread.size === 0) return ROOT_CONTEXT;
  const thread = args[0] as Parameters<typeof threadId>[0] | undefined;
  const list = thread ? intakesByThread.get(threadId(thread)) : undefined;
  if (!list) return ROOT_CONTEXT;
  return (list.find((intake) => intake.messageId === args[1]) ?? list[list.length - 1]!).context;
}

/**
 * Runs the gateway's handling of one platform message inside a server span `intake` (message, thread, whether
 * it mentions the bot; the intake's verdict when `handle` resolves one with a `kind`), a root. While `handle`
 * runs, the intake is in flight: {@link traceSubmit}, {@link traceEnqueue} and the gateway's chat calls find
 * their parent in it. Rethrows what `handle` throws, after recording it. With tracing off, just `handle()`.
 */
export async function traceIntake<T>(message: IncomingMessage, handle: () => Promise<T>): Promise<T> {
  if (!tracingActive()) return handle();
  const span = tracer().startSpan(
    "intake",
    {
      kind: SpanKind.SERVER,
      attributes: {
        "threadline.thread_id": threadId(message.thread),
        "threadline.message_id": message.id,
        "threadline.mentions_bot": message.mentionsBot,
      },
    },
    ROOT_CONTEXT,
  );
  const intake: IntakeTrace = {
    thread: threadId(message.thread),
    messageId: message.id,
    span,
    context: trace.setSpan(ROOT_CONTEXT, span),
    submit: undefined,
  };
  addIntake(intake);
  try {
    return await endWith(span, () => synchronously(intake, handle));
  } finally {
    removeIntake(intake);
  }
}

/**
 * Runs the intake decision (the intake script, and the job add of a decided start) inside `intake.submit`,
 * under the `intake` span whose handler calls it — before its first `await`, as the gateway does (called
 * later, the span is a root) —; the verdict's `kind` becomes `threadline.intake.result`.
 */
export async function traceSubmit<T extends { kind: string }>(submit: () => Promise<T>): Promise<T> {
  if (!tracingActive()) return submit();
  const intake = syncIntake;
  const parent = intake?.context ?? ROOT_CONTEXT;
  const span = tracer().startSpan("intake.submit", INTERNAL, parent);
  if (intake) intake.submit = trace.setSpan(parent, span);
  return endWith(span, submit);
}

async function endWith<T>(span: Span, body: () => Promise<T>): Promise<T> {
  try {
    const result = await body();
    const kind = (result as { kind?: unknown } | undefined)?.kind;
    if (typeof kind === "string") span.setAttribute("threadline.intake.result", kind);
    return result;
  } catch (err) {
    failSpan(span, err);
    throw err;
  } finally {
    span.end();
  }
}

/**
 * The gateway's outbound with a client span `chat.<method>` around every call (the acks of a message nest
 * under its `intake` span: {@link gatewayParent}). With tracing off when called, `outbound` itself.
 */
export function traceGatewayOutbound(outbound: ChatOutbound): ChatOutbound {
  if (!tracingActive()) return outbound;
  const overrides: Record<string, unknown> = {};
  for (const name of CHAT_METHODS) {
    const original = outbound[name] as (...args: unknown[]) => Promise<unknown>;
    const spanName = `chat.${name}`;
    overrides[name] = (...args: unknown[]) =>
      tracingActive()
        ? endWith(tracer().startSpan(spanName, CLIENT, gatewayParent(args)), () =>
            original.apply(outbound, args),
          )
        : original.apply(outbound, args);
  }
  return delegate(outbound, overrides);
}

/**
 * Runs `enqueue` inside a producer span `run.enqueue` and hands it the carrier of that span's context, or
 * `undefined` when tracing is off. Its parent is the `intake.submit` of the intake in flight in this process
 * for the job's thread (the gateway's decided start), else none (the start sweeper's re-add is a root).
 * Rethrows what `enqueue` throws, after recording it on the span.
 */
export async function traceEnqueue<T>(
  job: { threadId: string; runId: string },
  enqueue: (carrier: TraceCarrier | undefined) => Promise<T>,
): Promise<T> {
  if (!tracingActive()) return enqueue(undefined);
  const parent = enqueueParent(job.threadId);
  const span = tracer().startSpan(
    "run.enqueue",
    {
      kind: SpanKind.PRODUCER,
      attributes: { "threadline.thread_id": job.threadId, "threadline.run_id": job.runId },
    },
    parent,
  );
  try {
    let carrier: TraceCarrier | undefined;
    if (span.isRecording()) {
      carrier = {};
      propagation.inject(trace.setSpan(parent, span), carrier);
    }
    return await enqueue(carrier);
  } catch (err) {
    failSpan(span, err);
    throw err;
  } finally {
    span.end();
  }
}

function enqueueParent(thread: string): Context {
  if (syncIntake?.thread === thread && syncIntake.submit) return syncIntake.submit;
  const list = intakesByThread.get(thread);
  if (!list) return ROOT_CONTEXT;
  for (let i = list.length - 1; i >= 0; i--) {
    const submit = list[i]!.submit;
    if (submit) return submit;
  }
  return ROOT_CONTEXT;
}
