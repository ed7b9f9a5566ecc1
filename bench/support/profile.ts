import { mkdirSync, writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { dirname } from "node:path";

/** A CPU profile being recorded; `stop` writes it as a `.cpuprofile` file (Chrome DevTools, speedscope). */
export interface CpuProfile {
  stop(file: string): Promise<void>;
}

/**
 * Starts a CPU profile of this process from now (the measured phase only: no module loading, no warm-up)
 * until `stop`, sampling every `intervalMicros`.
 */
export async function startCpuProfile(intervalMicros: number): Promise<CpuProfile> {
  const session = new Session();
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Profiler.setSamplingInterval", { interval: intervalMicros });
  await session.post("Profiler.start");
  return {
    async stop(file) {
      const { profile } = await session.post("Profiler.stop");
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(file, JSON.stringify(profile));
      session.disconnect();
    },
  };
}

/**
 * `NODE_OPTIONS` that make a child process record a CPU profile of its whole life into `$CPU_PROFILE_DIR`
 * (`cpu-profile.mjs`; Node 20 refuses `--cpu-prof` in NODE_OPTIONS).
 */
export function wholeProcessProfileOptions(): string {
  return `--import ${new URL("./cpu-profile.mjs", import.meta.url).pathname}`;
}
