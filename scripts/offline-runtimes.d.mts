/** The Bun and Deno binaries of the bun and deno npm packages. */
export declare const OFFLINE_BINARIES: { readonly bun: string; readonly deno: string };

/** The command, arguments and environment that run `script` on Bun or Deno, offline. */
export declare function offlineRun(
  runtime: 'bun' | 'deno',
  script: string,
  options: { denoDir: string; scriptArgs?: string[]; runtimeFlags?: string[] },
): { command: string; args: string[]; env: Record<string, string> };
