// Registers a resolve hook that appends every resolved module URL to the file named by IMPORT_LOG:
// a child process started with `--import` of this file shows which modules it loaded.
import { register } from "node:module";

const hook = `
import { appendFileSync } from "node:fs";
export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  if (process.env.IMPORT_LOG) appendFileSync(process.env.IMPORT_LOG, result.url + "\\n");
  return result;
}
`;
register(`data:text/javascript,${encodeURIComponent(hook)}`);
