import { z } from "zod";

/*
 * Schemas of single settings whose messages say what is expected, with an example. The tools' option
 * schemas and the config module's schema are built from them, so a bad value reads the same wherever it
 * is set: "`<path>` must be a whole number, for example 20000".
 */

/** Non-empty text (trimmed). */
export const textSetting = (example: string) =>
  z
    .string({ error: `must be text, for example ${example}` })
    .trim()
    .min(1, { error: `must not be empty, for example ${example}` });

/** `true` or `false`. */
export const flagSetting = () => z.boolean({ error: "must be true or false" });

/** A whole number greater than 0. */
export const wholeNumberSetting = (example: string) =>
  z
    .number({ error: `must be a number, for example ${example}` })
    .int({ error: `must be a whole number, for example ${example}` })
    .positive({ error: `must be greater than 0, for example ${example}` });

/** A whole number, 0 meaning off. */
export const offOrCountSetting = (example: string) =>
  z
    .number({ error: `must be a number, for example ${example} (0 = off)` })
    .int({ error: `must be a whole number, for example ${example} (0 = off)` })
    .min(0, { error: `must be 0 (off) or more, for example ${example}` });

/** Any number. */
export const numberSetting = (example: string) =>
  z.number({ error: `must be a number, for example ${example}` });

/** One of a few texts. */
export const oneOfSetting = <const T extends readonly [string, ...string[]]>(values: T) =>
  z.enum(values, { error: `must be one of ${values.map((v) => `"${v}"`).join(", ")}` });

/** A list of texts. */
export const textListSetting = (example: string) =>
  z.array(z.string({ error: "must be text" }), { error: `must be a list of texts, for example ${example}` });

/** An object of texts (headers, environment variables). */
export const textRecordSetting = (example: string) =>
  z.record(z.string(), z.string({ error: "must be text" }), {
    error: `must be an object of texts, for example ${example}`,
  });

/** The part of `T` whose values are not `undefined`. */
type Defined<T> = { [K in keyof T]: Exclude<T[K], undefined> };

/**
 * `defaults` with every setting of `options` that has a value: unlike `{ ...defaults, ...options }`, an
 * option present as `undefined` (zod's optional fields admit it, a config module may write
 * `maxBytes: process.env.X && Number(process.env.X)`) keeps the default instead of erasing it.
 */
export function withDefaults<D extends object>(
  defaults: D,
  options: { readonly [K in keyof D]?: D[K] | undefined },
): Defined<D> {
  const given = options as Readonly<Record<string, unknown>>;
  const merged = Object.fromEntries(
    Object.entries(defaults).map(([key, fallback]) => [
      key,
      given[key] === undefined ? fallback : given[key],
    ]),
  );
  return merged as Defined<D>;
}
