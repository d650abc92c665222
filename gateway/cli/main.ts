#!/usr/bin/env node
/** The `tessera` bin: runs the command line (run_cli.ts) on this process's streams and exits with its code. */
import { runCli } from './run_cli.js';

process.exitCode = await runCli(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  stdin: process.stdin,
  env: process.env,
});
