/** Durations in the config: a number of seconds, or a number with a unit (`"90d"`, `"12h"`, `"30m"`, `"2s"`). */
import { z } from 'zod';

const secondsPerUnit = { s: 1, m: 60, h: 3600, d: 86_400 } as const;
const durationPattern = /^([0-9]+(?:\.[0-9]+)?)(s|m|h|d)$/;

/** Parses to seconds. */
export const durationSchema = z
  .union([
    z.number().positive(),
    z.string().regex(durationPattern, { error: 'must be seconds, or a number with a unit s, m, h or d (e.g. "90d")' }),
  ])
  .transform((value) => {
    if (typeof value === 'number') return value;
    const [, amount, unit] = durationPattern.exec(value) as RegExpExecArray;
    return Number(amount) * secondsPerUnit[unit as keyof typeof secondsPerUnit];
  });
