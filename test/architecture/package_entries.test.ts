// The package's entries as a validator module in a validatorsDir resolves them at run time:
// through package.json `exports` (the package's self-reference) to the built files in dist/, with
// no TypeScript loader involved. Needs a current build (`npm run build`).
import t from 'tap';
import { spawn } from 'node:child_process';
import path from 'node:path';

interface Probe {
  validatorEntry: string;
  rootEntry: string;
  validatorExports: string[];
  rootExports: string[];
  rootExportsInWorker: string[];
}

/** Runs a plain-JavaScript module from `dir` under plain Node (no tsx) and returns what it printed. */
function runProbe(dir: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const env = { ...process.env };
  delete env.NODE_OPTIONS; // tap's own loaders (tsx) would map 'tessera' to the TypeScript sources
  const child = spawn(process.execPath, [path.join(dir, 'probe.mjs')], { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

t.test('tessera/validator and tessera resolve to the built entries and export the validator API', async (t) => {
  const dir = t.testdir({
    'probe.mjs': `
      import { Worker } from 'node:worker_threads';
      const validator = await import('tessera/validator');
      const root = await import('tessera');
      // A validator that imports the root loads it in a worker thread, HTTP server and all.
      const rootExportsInWorker = await new Promise((resolve, reject) => {
        const worker = new Worker(new URL('./worker_probe.mjs', import.meta.url));
        worker.once('message', resolve);
        worker.once('error', reject);
      });
      console.log(JSON.stringify({
        validatorEntry: import.meta.resolve('tessera/validator'),
        rootEntry: import.meta.resolve('tessera'),
        validatorExports: Object.keys(validator).sort(),
        rootExports: Object.keys(root).sort(),
        rootExportsInWorker,
      }));
    `,
    'worker_probe.mjs': `
      import { parentPort } from 'node:worker_threads';
      const root = await import('tessera');
      parentPort.postMessage(Object.keys(root).sort());
    `,
  });
  const { code, stdout, stderr } = await runProbe(dir);
  t.equal(code, 0, stderr);
  const probe = JSON.parse(stdout) as Probe;
  t.match(probe.validatorEntry, /\/dist\/validator\.js$/);
  t.match(probe.rootEntry, /\/dist\/index\.js$/);
  t.same(
    probe.validatorExports,
    ['GrantValidationResult', 'TokenRequestErrors', 'authenticationMethods'],
    'the validator entry holds the validator API only',
  );
  const rootExports = ['GrantValidationResult', 'TesseraBuilder', 'TokenRequestErrors', 'authenticationMethods', 'createTessera'];
  t.same(probe.rootExports, rootExports, 'the root keeps the validator API beside the embedding API');
  t.same(probe.rootExportsInWorker, rootExports, 'the root loads in a worker thread too, for validators that import it');
});
