/** File system errors in words an operator reads (config file, signing key files). */
export function describeFsError(error: unknown): string {
  if (error instanceof Error && 'code' in error) {
    switch (error.code) {
      case 'ENOENT':
        return 'no such file';
      case 'EACCES':
      case 'EPERM':
        return 'permission denied';
      case 'EISDIR':
        return 'is a directory';
    }
    return String(error.code);
  }
  return error instanceof Error ? error.message : String(error);
}
