import { z } from "zod";

/**
 * Schemas of environment variables, shared by the providers' `env` shapes (see {@link ProviderModule}) and
 * `src/config`'s environment schema, so a variable of each kind is read and worded the same everywhere.
 * Every one trims; an empty value counts as unset.
 */

/** Optional text: empty or unset = `undefined`. */
export const optionalText = z
  .string()
  .trim()
  .transform((value) => (value === "" ? undefined : value))
  .optional();

/** An optional URL; the message names `example`. Empty or unset = `undefined`. */
export const urlSetting = (example: string) =>
  z
    .string()
    .trim()
    .refine((value) => value === "" || URL.canParse(value), {
      message: `must be a URL, for example ${example}`,
    })
    .transform((value) => (value === "" ? undefined : value))
    .optional();

/** A whole number above 0, `fallback` when unset; the messages name `example`. */
export const positiveIntSetting = (fallback: number, example: string) =>
  z.coerce
    .number({ message: `must be a whole number, for example ${example}` })
    .int({ message: `must be a whole number, for example ${example}` })
    .positive({ message: `must be greater than 0, for example ${example}` })
    .default(fallback);

/** A whole number of milliseconds, 0 = off, `fallback` when unset; the messages name `example`. */
export const msOrOffSetting = (fallback: number, example: string) => {
  const message = `must be a whole number of milliseconds, for example ${example} (0 turns it off)`;
  return z.coerce
    .number({ message })
    .int({ message })
    .min(0, { message: `must be 0 or more, for example ${example} (0 turns it off)` })
    .default(fallback);
};

/** An optional context window in tokens (at least 1 024); unset = `undefined`. */
export const contextWindowSetting = z
  .string()
  .trim()
  .optional()
  .transform((value) => (value ? Number(value) : undefined))
  .pipe(
    z
      .number({ message: "must be a whole number of tokens, for example 128000" })
      .int({ message: "must be a whole number of tokens, for example 128000" })
      .min(1024, { message: "must be at least 1024 tokens, for example 128000" })
      .optional(),
  );
