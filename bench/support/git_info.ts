import { execFileSync } from 'node:child_process';

export interface GitInfo {
  commit: string;
  /** Uncommitted changes to the gateway's code (gateway/, workers/, validators/) when measured. */
  dirty: boolean;
}

/** The commit a checkout is at, or null when it is not a git checkout. */
export function describeCheckout(root: string): GitInfo | null {
  try {
    const commit = execFileSync('git', ['-C', root, 'rev-parse', 'HEAD'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const status = execFileSync(
      'git',
      ['-C', root, 'status', '--porcelain', '--', 'gateway', 'core', 'wire', 'workers', 'validators', 'index.ts'],
      {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      },
    );
    return { commit, dirty: status.trim().length > 0 };
  } catch {
    return null;
  }
}
