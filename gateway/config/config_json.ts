/** The config file as JSON: parsed, or refused with the line and column of the first error. */
import { ConfigError } from './config_error.js';

export function parseJson(text: string, displayPath: string): unknown {
  // Editors on Windows like to write a BOM, which JSON.parse rejects.
  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  try {
    return JSON.parse(body);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new ConfigError([{ path: displayPath, message: `invalid JSON ${describeJsonError(message, body)}` }], { source: displayPath });
  }
}

/**
 * Says where and why a config file is not JSON: "at line 3, column 15: expected a value, found ","".
 * V8's own messages only sometimes carry a position and change between Node versions, so the file
 * is rescanned here; V8's message is the fallback if the scan disagrees.
 */
function describeJsonError(v8Message: string, text: string): string {
  const found = locateJsonError(text);
  if (found === undefined) return `(${v8Message})`;
  const before = text.slice(0, found.offset);
  const line = before.split('\n').length;
  const column = found.offset - before.lastIndexOf('\n');
  return `at line ${line}, column ${column}: ${found.reason}`;
}

class JsonScanError extends Error {
  constructor(
    readonly offset: number,
    readonly reason: string,
  ) {
    super(reason);
  }
}

/** A strict RFC 8259 scanner that only reports the first error; used after JSON.parse failed. */
function locateJsonError(text: string): { offset: number; reason: string } | undefined {
  let i = 0;
  const here = (): string => (i >= text.length ? 'the end of the file' : JSON.stringify(text[i]));
  const fail = (reason: string): never => {
    throw new JsonScanError(i, reason);
  };
  const skipWhitespace = (): void => {
    while (i < text.length && ' \t\n\r'.includes(text[i] as string)) i++;
  };
  const scanString = (): void => {
    i++;
    while (i < text.length) {
      const code = text.charCodeAt(i);
      if (code === 0x22) {
        i++;
        return;
      }
      if (code === 0x5c) {
        const escape = /^\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})/.exec(text.slice(i, i + 6));
        if (escape === null) fail('invalid escape sequence in a string');
        i += (escape as RegExpExecArray)[0].length;
        continue;
      }
      if (code < 0x20) fail('line break or control character inside a string (escape it, e.g. \\n)');
      i++;
    }
    fail('unterminated string');
  };
  const scanValue = (): void => {
    skipWhitespace();
    const start = text[i];
    if (start === '{') {
      i++;
      skipWhitespace();
      if (text[i] === '}') return void i++;
      for (;;) {
        skipWhitespace();
        if (text[i] !== '"') fail(`expected a property name in double quotes, found ${here()}`);
        scanString();
        skipWhitespace();
        if (text[i] !== ':') fail(`expected ":" after a property name, found ${here()}`);
        i++;
        scanValue();
        skipWhitespace();
        if (text[i] === ',') i++;
        else if (text[i] === '}') return void i++;
        else fail(`expected "," or "}" after a property value, found ${here()}`);
      }
    }
    if (start === '[') {
      i++;
      skipWhitespace();
      if (text[i] === ']') return void i++;
      for (;;) {
        scanValue();
        skipWhitespace();
        if (text[i] === ',') i++;
        else if (text[i] === ']') return void i++;
        else fail(`expected "," or "]" after an array element, found ${here()}`);
      }
    }
    if (start === '"') return scanString();
    const literal = /^(?:true|false|null|-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?)/.exec(text.slice(i, i + 512));
    if (literal === null) fail(`expected a value, found ${here()}`);
    i += (literal as RegExpExecArray)[0].length;
  };
  try {
    scanValue();
    skipWhitespace();
    if (i < text.length) fail(`unexpected ${here()} after the end of the document`);
  } catch (error) {
    if (error instanceof JsonScanError) return { offset: error.offset, reason: error.reason };
    return undefined; // e.g. nesting deep enough to overflow the stack: fall back to V8's message
  }
  return undefined;
}
