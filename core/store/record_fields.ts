/**
 * The fields of a packed record, read where it is stored: what lets {@link Store.redeemChain}
 * check a refresh token's record and write its successor in one step, without unpacking the
 * whole record (docs/storage.md, "One round trip per redemption"). The memory store runs this on
 * the main thread over its latin1 strings; `redis_store.ts` runs the same walk in Lua
 * (`recordFieldsLua`), so both stores decide alike.
 */
import { unpackRecordText } from './record_codec.js';
import type { ChainChecks, DerivedRecord, RedeemChecks } from './store.js';

/** Where each top-level field's value lies in the text: [start, end). */
type FieldSpans = Map<string, readonly [number, number]>;

const fixedSizes: Readonly<Record<number, number>> = {
  0xca: 5,
  0xcb: 9,
  0xcc: 2,
  0xcd: 3,
  0xce: 5,
  0xcf: 9,
  0xd0: 2,
  0xd1: 3,
  0xd2: 5,
  0xd3: 9,
  0xd4: 3,
  0xd5: 4,
  0xd6: 6,
  0xd7: 10,
  0xd8: 18,
};

function byteAt(text: string, i: number): number {
  if (i >= text.length) throw new RangeError('truncated msgpack');
  return text.charCodeAt(i);
}

function u16(text: string, i: number): number {
  return byteAt(text, i) * 0x100 + byteAt(text, i + 1);
}

function u32(text: string, i: number): number {
  return u16(text, i) * 0x10000 + u16(text, i + 2);
}

function skipItems(text: string, i: number, n: number): number {
  let j = i;
  for (let k = 0; k < n; k += 1) j = skipValue(text, j);
  return j;
}

/** The index after the msgpack value at `i`. */
function skipValue(text: string, i: number): number {
  const b = byteAt(text, i);
  if (b <= 0x7f || b >= 0xe0 || b === 0xc0 || b === 0xc2 || b === 0xc3) return i + 1;
  if (b >= 0xa0 && b <= 0xbf) return i + 1 + (b - 0xa0);
  if (b >= 0x90 && b <= 0x9f) return skipItems(text, i + 1, b - 0x90);
  if (b >= 0x80 && b <= 0x8f) return skipItems(text, i + 1, 2 * (b - 0x80));
  const fixed = fixedSizes[b];
  if (fixed !== undefined) return i + fixed;
  switch (b) {
    case 0xc4:
    case 0xd9:
      return i + 2 + byteAt(text, i + 1);
    case 0xc5:
    case 0xda:
      return i + 3 + u16(text, i + 1);
    case 0xc6:
    case 0xdb:
      return i + 5 + u32(text, i + 1);
    case 0xc7:
      return i + 3 + byteAt(text, i + 1);
    case 0xc8:
      return i + 4 + u16(text, i + 1);
    case 0xc9:
      return i + 6 + u32(text, i + 1);
    case 0xdc:
      return skipItems(text, i + 3, u16(text, i + 1));
    case 0xdd:
      return skipItems(text, i + 5, u32(text, i + 1));
    case 0xde:
      return skipItems(text, i + 3, 2 * u16(text, i + 1));
    case 0xdf:
      return skipItems(text, i + 5, 2 * u32(text, i + 1));
    default:
      throw new RangeError('not msgpack');
  }
}

/** The top-level fields of the map packed at `start`; `undefined` for anything else. */
function recordFields(text: string, start: number): FieldSpans | undefined {
  const b = byteAt(text, start);
  let n: number;
  let j: number;
  if (b >= 0x80 && b <= 0x8f) [n, j] = [b - 0x80, start + 1];
  else if (b === 0xde) [n, j] = [u16(text, start + 1), start + 3];
  else if (b === 0xdf) [n, j] = [u32(text, start + 1), start + 5];
  else return undefined;
  const fields: FieldSpans = new Map();
  for (let k = 0; k < n; k += 1) {
    const keyStart = j;
    j = skipValue(text, j);
    const name: unknown = unpackRecordText(text.slice(keyStart, j));
    const valueStart = j;
    j = skipValue(text, j);
    if (typeof name === 'string') fields.set(name, [valueStart, j]);
  }
  return fields;
}

function fieldValue(text: string, span: readonly [number, number] | undefined): unknown {
  return span === undefined ? undefined : unpackRecordText(text.slice(span[0], span[1]));
}

/** A float64 in msgpack, as a latin1 string. */
function packedDouble(value: number): string {
  const bytes = Buffer.allocUnsafe(9);
  bytes[0] = 0xcb;
  bytes.writeDoubleBE(value, 1);
  return bytes.toString('latin1');
}

/** What {@link checkChainRecord} decides for a record that passes. */
export interface CheckedChainRecord {
  /** The successor's packed record: this one with `expiresAt` moved. */
  readonly successor: string;
  readonly expiresAt: number;
  readonly absoluteExpiresAt: number;
}

/**
 * {@link ChainChecks} on the record packed in `text` from `start` (a header before it is kept in
 * the successor): the successor when every check passes, `undefined` when one does not or the
 * record is not the map they expect. The same rules as `tesseraRedeemChain`'s Lua.
 */
export function checkChainRecord(text: string, start: number, checks: ChainChecks): CheckedChainRecord | undefined {
  try {
    const fields = recordFields(text, start);
    if (fields === undefined) return undefined;
    if (fieldValue(text, fields.get('clientId')) !== checks.clientId) return undefined;
    const expiresSpan = fields.get('expiresAt');
    const expiresAt = fieldValue(text, expiresSpan);
    const absoluteExpiresAt = fieldValue(text, fields.get('absoluteExpiresAt'));
    if (expiresSpan === undefined || typeof expiresAt !== 'number' || typeof absoluteExpiresAt !== 'number') return undefined;
    if (!(expiresAt > checks.now && absoluteExpiresAt > checks.now)) return undefined;
    // A binding the record has must be the request's (RFC 9449 §5, RFC 8705 §4).
    for (const [name, wanted] of [
      ['jkt', checks.jkt],
      ['x5t', checks.x5t],
    ] as const) {
      if (fields.has(name) && (wanted === undefined || fieldValue(text, fields.get(name)) !== wanted)) return undefined;
    }
    const scopes = fieldValue(text, fields.get('scopes'));
    if (!Array.isArray(scopes) || scopes.length === 0) return undefined;
    for (const scope of scopes) if (typeof scope !== 'string' || !checks.scopes.includes(scope)) return undefined;
    const next = checks.slidingUntil === undefined ? absoluteExpiresAt : Math.min(absoluteExpiresAt, checks.slidingUntil);
    const successor = text.slice(0, expiresSpan[0]) + packedDouble(next) + text.slice(expiresSpan[1]);
    return { successor, expiresAt: next, absoluteExpiresAt };
  } catch {
    return undefined;
  }
}

/** A {@link DerivedRecord} as both stores build it: its `set` pairs packed (latin1), `nest` as a list. */
export interface DerivedRecordSpec {
  readonly whenScope: string;
  readonly copy: readonly string[];
  readonly nest: readonly (readonly [string, readonly string[]])[];
  readonly setCount: number;
  readonly setPairs: string;
}

/** The spec of `derived`, each `set` value packed by `pack` (into latin1 text). */
export function derivedRecordSpec(derived: DerivedRecord, pack: (value: unknown) => string): DerivedRecordSpec {
  const set = Object.entries(derived.set);
  const names = [
    ...set.map(([name]) => name),
    ...derived.copy,
    ...Object.entries(derived.nest ?? {}).flatMap(([n, inner]) => [n, ...inner]),
  ];
  for (const name of names) packedName(name);
  return {
    whenScope: derived.whenScope,
    copy: derived.copy,
    nest: Object.entries(derived.nest ?? {}),
    setCount: set.length,
    setPairs: set.map(([name, value]) => packedName(name) + pack(value)).join(''),
  };
}

/** What {@link checkRedeemRecord} decides for a record that passes: the derived record, if written. */
export interface CheckedRedeemRecord {
  /** The derived record's packed text; `undefined` when its scope is not granted (nothing derived). */
  readonly derived: string | undefined;
}

/** A short string key in msgpack (fixstr): every field name a derived record writes. */
function packedName(name: string): string {
  if (name.length > 31 || !/^[\x20-\x7e]*$/.test(name)) throw new Error(`not a short field name: ${name}`);
  return String.fromCharCode(0xa0 + name.length) + name;
}

/** A msgpack map header for `n` entries. */
function mapHeader(n: number): string {
  return n < 16 ? String.fromCharCode(0x80 + n) : String.fromCharCode(0xde, n >> 8, n & 0xff);
}

/**
 * {@link RedeemChecks} on the record packed in `text` from `start`, and the {@link DerivedRecord}
 * built from its fields: `undefined` when a check does not pass or the record is not the map they
 * expect. The same rules as `tesseraRedeemRecord`'s Lua.
 */
export function checkRedeemRecord(
  text: string,
  start: number,
  checks: RedeemChecks,
  derived: DerivedRecordSpec | undefined,
): CheckedRedeemRecord | undefined {
  try {
    const fields = recordFields(text, start);
    if (fields === undefined) return undefined;
    for (const [name, wanted] of Object.entries(checks.equal)) {
      if (wanted === null ? fields.has(name) : fieldValue(text, fields.get(name)) !== wanted) return undefined;
    }
    for (const [name, wanted] of Object.entries(checks.bound ?? {})) {
      if (fields.has(name) && (wanted === undefined || fieldValue(text, fields.get(name)) !== wanted)) return undefined;
    }
    for (const [name, after] of Object.entries(checks.later ?? {})) {
      const value = fieldValue(text, fields.get(name));
      if (typeof value !== 'number' || !(value > after)) return undefined;
    }
    const scopes = fieldValue(text, fields.get('scopes'));
    if (!Array.isArray(scopes) || scopes.length === 0) return undefined;
    for (const scope of scopes) if (typeof scope !== 'string' || !checks.scopes.includes(scope)) return undefined;
    if (derived === undefined || !scopes.includes(derived.whenScope)) return { derived: undefined };
    const span = (name: string): string => {
      const at = fields.get(name) as readonly [number, number];
      return text.slice(at[0], at[1]);
    };
    let n = derived.setCount;
    let body = derived.setPairs;
    for (const name of derived.copy) {
      if (!fields.has(name)) continue;
      n += 1;
      body += packedName(name) + span(name);
    }
    for (const [name, inner] of derived.nest) {
      const present = inner.filter((f) => fields.has(f));
      n += 1;
      body += packedName(name) + mapHeader(present.length) + present.map((f) => packedName(f) + span(f)).join('');
    }
    return { derived: mapHeader(n) + body };
  } catch {
    return undefined;
  }
}

/**
 * The Lua of the same walk, for Redis's scripts (Redis ships `cmsgpack` and `struct`): defines
 * `recordFields(s, start)` and `fieldValue(s, span)` (`nil` for a value it cannot read).
 */
export const recordFieldsLua = `
local fixedSizes = {[0xca] = 5, [0xcb] = 9, [0xcc] = 2, [0xcd] = 3, [0xce] = 5, [0xcf] = 9, [0xd0] = 2, [0xd1] = 3,
  [0xd2] = 5, [0xd3] = 9, [0xd4] = 3, [0xd5] = 4, [0xd6] = 6, [0xd7] = 10, [0xd8] = 18}
local function byteAt(s, i)
  local b = string.byte(s, i)
  if not b then error('truncated msgpack') end
  return b
end
local function u16(s, i) return byteAt(s, i) * 256 + byteAt(s, i + 1) end
local function u32(s, i) return u16(s, i) * 65536 + u16(s, i + 2) end
local skipValue
local function skipItems(s, i, n)
  for _ = 1, n do i = skipValue(s, i) end
  return i
end
skipValue = function(s, i)
  local b = byteAt(s, i)
  if b <= 0x7f or b >= 0xe0 or b == 0xc0 or b == 0xc2 or b == 0xc3 then return i + 1 end
  if b >= 0xa0 and b <= 0xbf then return i + 1 + (b - 0xa0) end
  if b >= 0x90 and b <= 0x9f then return skipItems(s, i + 1, b - 0x90) end
  if b >= 0x80 and b <= 0x8f then return skipItems(s, i + 1, 2 * (b - 0x80)) end
  if fixedSizes[b] then return i + fixedSizes[b] end
  if b == 0xc4 or b == 0xd9 then return i + 2 + byteAt(s, i + 1) end
  if b == 0xc5 or b == 0xda then return i + 3 + u16(s, i + 1) end
  if b == 0xc6 or b == 0xdb then return i + 5 + u32(s, i + 1) end
  if b == 0xc7 then return i + 3 + byteAt(s, i + 1) end
  if b == 0xc8 then return i + 4 + u16(s, i + 1) end
  if b == 0xc9 then return i + 6 + u32(s, i + 1) end
  if b == 0xdc then return skipItems(s, i + 3, u16(s, i + 1)) end
  if b == 0xdd then return skipItems(s, i + 5, u32(s, i + 1)) end
  if b == 0xde then return skipItems(s, i + 3, 2 * u16(s, i + 1)) end
  if b == 0xdf then return skipItems(s, i + 5, 2 * u32(s, i + 1)) end
  error('not msgpack')
end
local function recordFields(s, start)
  local b = byteAt(s, start)
  local n, j
  if b >= 0x80 and b <= 0x8f then n, j = b - 0x80, start + 1
  elseif b == 0xde then n, j = u16(s, start + 1), start + 3
  elseif b == 0xdf then n, j = u32(s, start + 1), start + 5
  else return nil end
  local fields = {}
  for _ = 1, n do
    local keyStart = j
    j = skipValue(s, j)
    local name = cmsgpack.unpack(string.sub(s, keyStart, j - 1))
    local valueStart = j
    j = skipValue(s, j)
    if type(name) == 'string' then fields[name] = {valueStart, j} end
  end
  return fields
end
local function fieldValue(s, span)
  if not span then return nil end
  local ok, value = pcall(cmsgpack.unpack, string.sub(s, span[1], span[2] - 1))
  if ok then return value end
  return nil
end`;
