/** Child `bare`: the model alone (bare node:http loops), the streaming scenario's baseline. */
import http from "node:http";
import { sendToParent } from "../support/child.js";
import { type BareResult, type ChildArgs, parentSaysGo } from "./protocol.js";
import { now, TURNS } from "./settings.js";

export async function bareChild(args: ChildArgs): Promise<void> {
  const agent = new http.Agent({ keepAlive: true });
  const url = new URL(`${args.baseURL}/chat/completions`);
  const request = (turn: number) =>
    new Promise<void>((resolve, reject) => {
      const messages = [{ role: "user", content: "go" }];
      for (let i = 0; i < turn; i++) messages.push({ role: "assistant", content: "x" });
      const body = JSON.stringify({ model: "stream", stream: true, messages });
      const req = http.request(
        {
          host: url.hostname,
          port: url.port,
          path: url.pathname,
          method: "POST",
          agent,
          headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
        },
        (res) => {
          // A minimal client: split SSE events and parse each one (what any consumer must do).
          let buffered = "";
          res.setEncoding("utf8");
          res.on("data", (text: string) => {
            buffered += text;
            let end = buffered.indexOf("\n\n");
            while (end >= 0) {
              const event = buffered.slice(0, end);
              buffered = buffered.slice(end + 2);
              if (event.startsWith("data: {")) JSON.parse(event.slice(6));
              end = buffered.indexOf("\n\n");
            }
          });
          res.on("end", () => resolve());
          res.on("error", reject);
        },
      );
      req.on("error", reject);
      req.end(body);
    });
  const loop = async (turns: number, starts: number[]) => {
    for (let turn = 0; turn < turns; turn++) {
      starts.push(now());
      await request(turn);
    }
  };
  await Promise.all(Array.from({ length: Math.min(args.n, 50) }, () => loop(2, [])));
  if (args.process) {
    // Scale-out: the bare clients of every process start their measured turns together.
    sendToParent({ type: "ready" });
    await parentSaysGo();
  }
  const runs = Array.from({ length: args.n }, () => [] as number[]);
  const cpu0 = process.cpuUsage();
  await Promise.all(runs.map((starts) => loop(TURNS, starts)));
  const cpu = process.cpuUsage(cpu0);
  const intervals: number[] = [];
  for (const starts of runs)
    for (let k = 0; k + 1 < starts.length; k++) intervals.push(starts[k + 1]! - starts[k]!);
  const cpuMicrosPerTurn = (cpu.user + cpu.system) / (args.n * TURNS);
  sendToParent({ type: "result", data: { intervals, cpuMicrosPerTurn } satisfies BareResult });
  agent.destroy();
}
