import { createHmac } from "node:crypto";
import type { WebSocket } from "ws";

/** One delivery of an Events API event or an interactive payload, retried until acknowledged. */
export interface Delivery {
  kind: "events_api" | "interactive";
  envelopeId: string;
  /** `event_id` for events; absent for interactive payloads. */
  eventId?: string;
  payload: Record<string, unknown>;
  attempts: number;
  /** HTTP mode: what each attempt was answered (a status, or `timeout` / `refused`), in order. */
  responses: (number | "timeout" | "refused")[];
  acked: boolean;
  /**
   * What the app answered with its acknowledgement (Socket Mode: the ack's `payload`; HTTP: the JSON
   * body), e.g. a `view_submission`'s `response_action`; `undefined` for a bare ack.
   */
  response?: unknown;
  /** Resolves when the app acknowledged (socket ack, or HTTP 200). */
  ack: Promise<void>;
  resolveAck: () => void;
  timer?: NodeJS.Timeout;
}

/** Options of {@link EventDelivery}. */
export interface EventDeliveryOptions {
  /** Wait this long for an ack before retrying. Slack waits 3 s. */
  ackTimeoutMs: number;
  /** Retries after the first attempt (Slack: 3). */
  maxRetries: number;
  /** HTTP mode: the signing secret. */
  signingSecret: string;
}

/**
 * Delivers events to the app the way Slack does. Socket Mode: each delivery goes to one open connection
 * as an envelope; an envelope not acknowledged within `ackTimeoutMs` (or whose connection dropped) is
 * sent again with the same envelope id and event id, `retry_attempt` + 1. HTTP: signed POSTs (v0
 * signature) to `httpUrl`, retried with `X-Slack-Retry-Num` when the answer is not a 200 in time. Slack's
 * Events API docs ("Error handling" / retries): a delivery fails on `http_timeout` (no answer in 3 s),
 * `http_error` (any non-2xx), `connection_failed`…, and is retried 3 times — nearly at once, after 1 min,
 * after 5 min; the fake keeps the count and compresses the schedule to 100 ms between HTTP attempts.
 * With no connection and no URL, deliveries wait until a connection opens.
 */
export class EventDelivery {
  readonly sockets = new Set<WebSocket>();
  /** HTTP Events API endpoint of the app; set to deliver over HTTP instead of Socket Mode. */
  httpUrl: string | undefined;
  /** Every delivery so far, oldest first. */
  readonly all: Delivery[] = [];
  private readonly pending = new Map<string, Delivery>();
  private readonly assigned = new Map<string, WebSocket>();
  private seq = 0;

  constructor(private readonly options: EventDeliveryOptions) {}

  /** Starts delivering; resolves with the delivery (await `ack` to know it was acknowledged). */
  deliver(kind: Delivery["kind"], payload: Record<string, unknown>, eventId?: string): Delivery {
    let resolveAck!: () => void;
    const ack = new Promise<void>((resolve) => {
      resolveAck = resolve;
    });
    const delivery: Delivery = {
      kind,
      envelopeId: `env-${++this.seq}-${Date.now().toString(36)}`,
      payload,
      attempts: 0,
      responses: [],
      acked: false,
      ack,
      resolveAck,
      ...(eventId !== undefined ? { eventId } : {}),
    };
    this.pending.set(delivery.envelopeId, delivery);
    this.all.push(delivery);
    this.attempt(delivery);
    return delivery;
  }

  /** A new Socket Mode connection: greet it and send what is waiting. */
  connected(socket: WebSocket): void {
    this.sockets.add(socket);
    socket.send(
      JSON.stringify({
        type: "hello",
        num_connections: this.sockets.size,
        debug_info: { host: "fake-slack", approximate_connection_time: 3600 },
        connection_info: { app_id: "A0FAKEAPP" },
      }),
    );
    socket.on("message", (data) => this.onSocketMessage(String(data)));
    socket.on("close", () => {
      this.sockets.delete(socket);
      for (const [envelopeId, owner] of this.assigned) {
        const delivery = this.pending.get(envelopeId);
        if (owner === socket && delivery && !delivery.acked) this.retry(delivery);
      }
    });
    for (const delivery of this.pending.values()) {
      if (!delivery.acked && !this.assigned.has(delivery.envelopeId)) this.attempt(delivery);
    }
  }

  /** Asks every connection to reconnect (`disconnect` message), or drops them without a word. */
  disconnectAll(how: "refresh" | "terminate"): void {
    for (const socket of this.sockets) {
      if (how === "terminate") socket.terminate();
      else
        socket.send(
          JSON.stringify({
            type: "disconnect",
            reason: "refresh_requested",
            debug_info: { host: "fake-slack" },
          }),
        );
    }
  }

  /** Stops retrying. */
  close(): void {
    for (const delivery of this.pending.values()) clearTimeout(delivery.timer);
    this.pending.clear();
  }

  private attempt(delivery: Delivery): void {
    if (delivery.acked) return;
    if (this.httpUrl !== undefined) {
      void this.post(delivery);
      return;
    }
    const socket = [...this.sockets].find((candidate) => candidate.readyState === candidate.OPEN);
    if (!socket) return; // sent when a connection opens
    delivery.attempts++;
    this.assigned.set(delivery.envelopeId, socket);
    const retry = delivery.attempts - 1;
    socket.send(
      JSON.stringify({
        envelope_id: delivery.envelopeId,
        type: delivery.kind,
        payload: delivery.payload,
        accepts_response_payload: delivery.kind === "interactive",
        ...(delivery.kind === "events_api"
          ? { retry_attempt: retry, retry_reason: retry === 0 ? "" : "timeout" }
          : {}),
      }),
    );
    delivery.timer = setTimeout(() => this.retry(delivery), this.options.ackTimeoutMs);
  }

  private retry(delivery: Delivery): void {
    clearTimeout(delivery.timer);
    this.assigned.delete(delivery.envelopeId);
    if (delivery.acked || delivery.attempts > this.options.maxRetries) return;
    this.attempt(delivery);
  }

  private onSocketMessage(data: string): void {
    let message: { envelope_id?: string; payload?: unknown };
    try {
      message = JSON.parse(data) as { envelope_id?: string; payload?: unknown };
    } catch {
      return;
    }
    const delivery = message.envelope_id ? this.pending.get(message.envelope_id) : undefined;
    if (!delivery) return;
    // A bare ack (Bolt sends `payload: {}`) carries no answer.
    const payload = message.payload;
    const bare =
      payload === undefined ||
      (typeof payload === "object" && payload !== null && Object.keys(payload).length === 0);
    if (!bare) delivery.response = payload;
    this.acknowledge(delivery);
  }

  private acknowledge(delivery: Delivery): void {
    delivery.acked = true;
    clearTimeout(delivery.timer);
    this.pending.delete(delivery.envelopeId);
    this.assigned.delete(delivery.envelopeId);
    delivery.resolveAck();
  }

  private async post(delivery: Delivery): Promise<void> {
    const url = this.httpUrl!;
    delivery.attempts++;
    const body =
      delivery.kind === "interactive"
        ? `payload=${encodeURIComponent(JSON.stringify(delivery.payload))}`
        : JSON.stringify(delivery.payload);
    const headers: Record<string, string> = {
      "content-type":
        delivery.kind === "interactive" ? "application/x-www-form-urlencoded" : "application/json",
      ...signatureHeaders(this.options.signingSecret, body),
    };
    if (delivery.attempts > 1) {
      headers["x-slack-retry-num"] = String(delivery.attempts - 1);
      headers["x-slack-retry-reason"] = "http_timeout";
    }
    try {
      const response = await fetch(url, {
        method: "POST",
        headers,
        body,
        signal: AbortSignal.timeout(this.options.ackTimeoutMs),
      });
      const text = await response.text();
      delivery.responses.push(response.status);
      if (response.status === 200) {
        if (text !== "") delivery.response = parseAck(text);
        this.acknowledge(delivery);
        return;
      }
    } catch (err) {
      // timed out or refused: retried below
      delivery.responses.push((err as Error).name === "TimeoutError" ? "timeout" : "refused");
    }
    if (delivery.attempts <= this.options.maxRetries && this.pending.has(delivery.envelopeId)) {
      delivery.timer = setTimeout(() => void this.post(delivery), 100);
    }
  }
}

function parseAck(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** Slack's request signature headers (`v0=` HMAC-SHA256 of `v0:<timestamp>:<body>`). */
export function signatureHeaders(secret: string, body: string, timestamp = Math.floor(Date.now() / 1000)) {
  const signature = createHmac("sha256", secret).update(`v0:${timestamp}:${body}`).digest("hex");
  return { "x-slack-request-timestamp": String(timestamp), "x-slack-signature": `v0=${signature}` };
}
