/** zod's issues as config problems: a dotted path and a message worded for someone editing JSON. */
import type { z } from 'zod';
import type { ConfigProblem } from './config_error.js';

/**
 * Messages for zod's generic issues, worded for someone editing a JSON file. Messages written in
 * the schema itself take precedence over these.
 */
export function describeIssue(issue: z.core.$ZodRawIssue): string | undefined {
  switch (issue.code) {
    case 'invalid_type':
      if (issue.input === undefined) return 'is required';
      if (issue.expected === 'int') return `must be an integer (got ${JSON.stringify(issue.input)})`;
      return `must be ${article(jsonTypeName(issue.expected))} (got ${jsonTypeName(typeOfJson(issue.input))})`;
    case 'too_small':
      if (issue.origin === 'array') return `must list at least ${String(issue.minimum)} ${issue.minimum === 1 ? 'entry' : 'entries'}`;
      if (issue.origin === 'string')
        return issue.minimum === 1 ? 'must not be empty' : `must be at least ${String(issue.minimum)} characters long`;
      return issue.inclusive === false ? `must be greater than ${String(issue.minimum)}` : `must be at least ${String(issue.minimum)}`;
    case 'too_big':
      if (issue.origin === 'array') return `must list at most ${String(issue.maximum)} entries`;
      if (issue.origin === 'string') return `must be at most ${String(issue.maximum)} characters long`;
      return issue.inclusive === false ? `must be less than ${String(issue.maximum)}` : `must be at most ${String(issue.maximum)}`;
    case 'invalid_value':
      return `must be ${issue.values.length === 1 ? '' : 'one of '}${issue.values.map((value) => JSON.stringify(value)).join(', ')}`;
    case 'invalid_union': {
      const options: unknown = issue.options;
      if (issue.discriminator !== undefined && Array.isArray(options)) {
        return `must be one of ${options.map((value) => JSON.stringify(value)).join(', ')}`;
      }
      // A union of plain types (a user claim value): name the types instead of "Invalid input".
      const expected = issue.errors.map((branch) =>
        branch.length === 1 && branch[0]?.code === 'invalid_type' ? branch[0].expected : undefined,
      );
      if (expected.length > 1 && expected.every((type) => type !== undefined)) {
        const names = expected.map((type) => article(jsonTypeName(type)));
        return `must be ${names.slice(0, -1).join(', ')} or ${String(names.at(-1))}`;
      }
      return undefined;
    }
    case 'invalid_format':
      if (issue.format === 'datetime' || issue.format === 'date') return 'must be an ISO 8601 date or date-time';
      if (issue.format === 'url') return 'must be an absolute URL';
      return undefined;
    default:
      return undefined;
  }
}

export function toProblems(issue: z.core.$ZodIssue): ConfigProblem[] {
  // One problem per unknown field, at the field's own path: that is where the typo is.
  if (issue.code === 'unrecognized_keys') {
    return issue.keys.map((key) => ({ path: formatPath([...issue.path, key]), message: 'unknown field' }));
  }
  return [{ path: formatPath(issue.path), message: issue.message }];
}

/** `['clients', 2, 'allowedGrantTypes', 0]` → `clients[2].allowedGrantTypes[0]`; `[]` → `(root)`. */
function formatPath(path: readonly PropertyKey[]): string {
  if (path.length === 0) return '(root)';
  let text = '';
  for (const key of path) {
    if (typeof key === 'number') text += `[${key}]`;
    else if (typeof key === 'string' && /^[A-Za-z_$][\w$]*$/.test(key)) text += text === '' ? key : `.${key}`;
    else text += `[${JSON.stringify(String(key))}]`;
  }
  return text;
}

function typeOfJson(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

function jsonTypeName(type: string): string {
  return type === 'record' ? 'object' : type;
}

function article(noun: string): string {
  return noun === 'null' ? 'null' : /^[aeiou]/.test(noun) ? `an ${noun}` : `a ${noun}`;
}
