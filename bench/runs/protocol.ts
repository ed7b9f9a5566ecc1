/** What the parent hands a child (`--child <kind> <json>`) and what each child answers. */

export interface ChildArgs {
  prefix: string;
  baseURL: string;
  n: number;
  warm: number;
  rounds: number;
  editIntervalMs: number;
  /** Directory for a CPU profile of the measured phase of each streaming worker (`--profile`). */
  profileDir?: string;
  /**
   * Scale-out: this child is process `index` of `of` started together on the same queue (streaming
   * worker or bare client). It says `ready` once warmed up, waits for the parent's `go` (so that every
   * process starts measuring at the same moment), then says `ready` again.
   */
  process?: { index: number; of: number };
}

/** What the parent sends a scale-out child once every process has warmed up. */
export const GO = "go";

/** Waits for the parent's {@link GO} (over the child's IPC channel). */
export function parentSaysGo(): Promise<void> {
  return new Promise((resolve) => {
    const listener = (message: unknown) => {
      if ((message as { type?: string } | undefined)?.type !== GO) return;
      process.off("message", listener);
      resolve();
    };
    process.on("message", listener);
  });
}

export type LatencyResult = Record<string, number[]>;

export interface BareResult {
  intervals: number[];
  /** CPU per turn of the minimal client (request, SSE split, JSON.parse of every event). */
  cpuMicrosPerTurn: number;
}

export interface StreamResult {
  n: number;
  runsOk: number;
  turns: number;
  intervals: number[];
  gaps: number[];
  modelTimes: number[];
  cpuMicros: number;
  wallMs: number;
  rampMs: number;
  rssBase: number;
  rssPeak: number;
  heapBase: number;
  heapPeak: number;
  eldP50: number;
  eldP99: number;
  eldMax: number;
  /** Event-loop stalls of 25 ms or more (a 5 ms timer that fired that late) and the time they took. */
  stalls25: number;
  stalledMs: number;
  edits: number;
  posts: number;
}

export interface ParkedResult {
  n: number;
  /** The parked runs' transcripts as stored (JSON bytes of every entry), summed over the runs. */
  transcriptBytes: number;
  parkMs: number;
  rssBase: number;
  rssAfter: number;
  heapBase: number;
  heapAfter: number;
  externalBase: number;
  externalAfter: number;
  resources: Record<string, number>;
}

export function resourceCounts(): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const name of process.getActiveResourcesInfo()) counts[name] = (counts[name] ?? 0) + 1;
  return counts;
}
