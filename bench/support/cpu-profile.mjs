// Preloaded with `NODE_OPTIONS=--import <this file>` (Node 20 refuses --cpu-prof in NODE_OPTIONS): records a
// CPU profile of the whole process and writes it to $CPU_PROFILE_DIR/<pid>.cpuprofile when it exits.
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";

const dir = process.env.CPU_PROFILE_DIR ?? ".";
const session = new Session();
session.connect();
await session.post("Profiler.enable");
await session.post("Profiler.start");

const exit = process.exit.bind(process);
let writing = false;
process.exit = (code) => {
  if (writing) return exit(code);
  writing = true;
  session
    .post("Profiler.stop")
    .then(({ profile }) => writeFileSync(`${dir}/${process.pid}.cpuprofile`, JSON.stringify(profile)))
    .finally(() => exit(code));
};
