import { spawn } from 'node:child_process';
import { accessSync, constants, readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Test } from 'tap';
import { killAtExit } from './kill_at_exit.js';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

/** The shipped front (docs/operations.md, "Behind a proxy"). */
export const shippedSitePath = path.join(repoRoot, 'deploy/nginx/tessera.conf');

/** nginx on the PATH, or Debian's /usr/sbin/nginx (not on a non-root user's PATH), or null. */
export function findNginx(): string | null {
  const dirs = [...(process.env.PATH ?? '').split(path.delimiter), '/usr/sbin'];
  for (const dir of dirs) {
    if (dir === '') continue;
    const candidate = path.join(dir, 'nginx');
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not in this folder
    }
  }
  return null;
}

export const nginxPath = findNginx();

/** A tap `skip` value: false where nginx is installed, else the reason. `.ci/run` installs it. */
export const skipWithoutNginx =
  nginxPath === null
    ? "no nginx binary on the PATH or in /usr/sbin: install Debian's nginx (apt-get install nginx) to run the reverse-proxy test"
    : false;

/**
 * The shipped file with each line marked `# site: NAME` replaced by `values[NAME]` (its
 * indentation kept) and every other line as it is, so that what runs is what ships. A marker
 * without a value, a value without a marker or a marker used twice throws: a renamed or added
 * site line must reach the test.
 */
export function renderSite(text: string, values: Readonly<Record<string, string>>): string {
  const used = new Set<string>();
  const lines = text.split('\n').map((line) => {
    const marker = /#\s*site:\s*([\w-]+)/.exec(line);
    if (marker === null) return line;
    const name = marker[1] as string;
    const value = values[name];
    if (value === undefined) throw new Error(`no value for the site line "${name}"`);
    if (used.has(name)) throw new Error(`the site line "${name}" is marked twice`);
    used.add(name);
    return `${/^\s*/.exec(line)?.[0] ?? ''}${value}`;
  });
  for (const name of Object.keys(values)) if (!used.has(name)) throw new Error(`no site line "${name}" in the file`);
  return lines.join('\n');
}

export interface RunningNginx {
  /** The error log so far (level warn and above). */
  errorLog(): string;
}

/**
 * nginx in the foreground as a child of the test (`-p dir -c dir/nginx.conf`), one process
 * (`master_process off`: no worker switching to another user that cannot read `dir`), every path
 * it writes inside `dir`, `site` included in its `http` block. Resolves once `port` accepts
 * connections; stopped when the test ends.
 */
export async function startNginx(t: Test, options: { dir: string; site: string; port: number }): Promise<RunningNginx> {
  const { dir } = options;
  if (nginxPath === null) throw new Error('nginx not found');
  writeFileSync(path.join(dir, 'site.conf'), options.site);
  const temp = (name: string) => `${name}_temp_path ${path.join(dir, name)};`;
  writeFileSync(
    path.join(dir, 'nginx.conf'),
    [
      'daemon off;',
      'master_process off;',
      `pid ${path.join(dir, 'nginx.pid')};`,
      `error_log ${path.join(dir, 'error.log')} warn;`,
      'events { worker_connections 512; }',
      'http {',
      '  access_log off;',
      ...['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((name) => `  ${temp(name)}`),
      `  include ${path.join(dir, 'site.conf')};`,
      '}',
      '',
    ].join('\n'),
  );
  const errorLogPath = path.join(dir, 'error.log');
  const errorLog = () => {
    try {
      return readFileSync(errorLogPath, 'utf8');
    } catch {
      return '';
    }
  };
  // -e: the error log before the config is read (Debian's default, /var/log/nginx, needs root).
  const child = spawn(nginxPath, ['-p', dir, '-c', path.join(dir, 'nginx.conf'), '-e', errorLogPath], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  killAtExit(child);
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  t.teardown(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await exited;
    }
  });
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`nginx exited with ${child.exitCode}: ${stderr}${errorLog()}`);
    if (await accepts(options.port)) return { errorLog };
    if (Date.now() > deadline) throw new Error(`nginx did not listen on ${options.port} within 10 s: ${stderr}${errorLog()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
