import { availableParallelism, loadavg } from "node:os";

/**
 * How a percentile picks its value from the sorted samples: `nearest` the nearest rank (⌈p·n⌉-th),
 * `floor` the sample at index ⌊p·n⌋ (one rank higher at exact multiples), `linear` interpolated between
 * the two nearest ranks. Each bench keeps the method it has always reported with.
 */
export type PercentileMethod = "nearest" | "floor" | "linear";

/** Percentile (`p` in 0–100) of the finite values; NaN when there are none. Default nearest rank. */
export function percentile(
  values: readonly number[],
  p: number,
  method: PercentileMethod = "nearest",
): number {
  const sorted = values.filter((value) => Number.isFinite(value)).sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  if (method === "linear") {
    const at = (sorted.length - 1) * (p / 100);
    const low = Math.floor(at);
    const high = Math.ceil(at);
    return sorted[low]! + (sorted[high]! - sorted[low]!) * (at - low);
  }
  const index =
    method === "floor" ? Math.floor((p / 100) * sorted.length) : Math.ceil((p / 100) * sorted.length) - 1;
  return sorted[Math.min(sorted.length - 1, Math.max(0, index))]!;
}

/** Nearest-rank median (the lower middle value of an even count). */
export function median(values: readonly number[]): number {
  return percentile(values, 50);
}

/** The middle value, or the mean of the two middle values of an even count; NaN when there are none. */
export function midpointMedian(values: readonly number[]): number {
  return percentile(values, 50, "linear");
}

/** How a target check is printed. */
export function verdict(ok: boolean): "PASS" | "FAIL" {
  return ok ? "PASS" : "FAIL";
}

/** The 1, 5 and 15 minute load averages, `0.52 0.61 0.70`. */
export function loadAverages(): string {
  return loadavg()
    .map((load) => load.toFixed(2))
    .join(" ");
}

/** `node v20…, <n> CPUs, load <1 5 15>`: the machine a result was measured on. */
export function machineLine(): string {
  return `node ${process.version}, ${availableParallelism()} CPUs, load ${loadAverages()}`;
}
