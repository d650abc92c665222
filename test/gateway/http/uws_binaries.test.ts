// The HTTP engine is pinned (docs/operations.md, "The HTTP engine"): every native binary the
// uWebSockets.js package ships has the SHA-256 listed in uws_binaries.sha256, and the one this
// process loaded is among them. A republish with other binaries, or another version of the
// package, fails here until the list is updated on purpose.
import t from 'tap';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as uWS from 'uWebSockets.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const packageDir = path.join(root, 'node_modules/uWebSockets.js');
const binDir = path.join(packageDir, 'dist/bin');

/** uws_binaries.sha256, in `sha256sum` format: `<hex>  node_modules/uWebSockets.js/dist/bin/<file>`. */
const pinned = new Map(
  readFileSync(path.join(root, 'uws_binaries.sha256'), 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      const match = /^([0-9a-f]{64}) {2}node_modules\/uWebSockets\.js\/dist\/bin\/(uws_[a-z0-9]+_[a-z0-9]+_\d+\.node)$/.exec(line);
      if (match === null) throw new Error(`uws_binaries.sha256: not a "<sha256>  <path>" line: ${line}`);
      return [match[2] as string, match[1] as string];
    }),
);

function sha256(file: string): string {
  return createHash('sha256').update(readFileSync(file)).digest('hex');
}

t.test('the package is the pinned repack of upstream uWebSockets.js', async (t) => {
  const manifest = JSON.parse(readFileSync(path.join(packageDir, 'package.json'), 'utf8')) as { name: string; version: string };
  t.same({ name: manifest.name, version: manifest.version }, { name: 'uws-pack', version: '20.0.8' });
});

t.test('every binary the package ships is listed, with its SHA-256', async (t) => {
  const shipped = readdirSync(binDir)
    .filter((file) => file.endsWith('.node'))
    .sort();
  t.same(shipped, [...pinned.keys()].sort(), 'the same files, none added or missing');
  for (const file of shipped) t.equal(sha256(path.join(binDir, file)), pinned.get(file), file);
  // The supported runtime, Node 22 (ABI 127), and Node 20 (ABI 115) while it is still around,
  // on both Linux architectures the image is built for.
  for (const abi of [115, 127]) {
    for (const arch of ['x64', 'arm64']) t.ok(pinned.has(`uws_linux_${arch}_${abi}.node`), `linux ${arch}, ABI ${abi}`);
  }
});

t.test('the binary this process loaded is a pinned one', async (t) => {
  t.equal(typeof uWS.App, 'function', 'uWebSockets.js is loaded');
  // The loader's own choice (dist/uws.mjs): platform, architecture and Node's module ABI.
  const expected = `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`;
  t.ok(pinned.has(expected), `${expected} (Node ${process.version}) is listed`);
  if (process.platform === 'linux') {
    // What the dynamic loader actually mapped, not the name it should have picked.
    const mapped = new Set(
      readFileSync('/proc/self/maps', 'utf8')
        .split('\n')
        .map((line) => line.slice(line.indexOf('/')))
        .filter((file) => /\/uws_[^/]*\.node$/.test(file)),
    );
    t.same([...mapped], [realpathSync(path.join(binDir, expected))], 'the one mapped into this process');
  }
  t.equal(sha256(path.join(binDir, expected)), pinned.get(expected), 'its SHA-256 is the pinned one');
});
