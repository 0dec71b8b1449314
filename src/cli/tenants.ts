/**
 * Many schools on one endpoint, from a shell: `--secrets-file tenants.json` (each tenant's secret or
 * secrets), the tenant's path segment `listen` answers and `send --tenant` posts to, and how a
 * tenant is shown. A secret of the file is never part of a message.
 * @module
 */

import { readFile } from 'node:fs/promises';
import { isTenantName, MAX_TENANT_LENGTH, quotedTenant } from '../keys/delivery-key.js';
import type { CliIo } from './command.js';
import { messageOf, UsageError } from './errors.js';
import { checkSecret } from './secret.js';
import type { OptionSpec } from './options.js';

/** Each tenant's secrets, by the tenant's name, in the file's order. */
export type TenantSecretMap = ReadonlyMap<string, readonly string[]>;

/** `--secrets-file`, for `listen` and `send`. */
export const SECRETS_FILE_OPTION = {
  type: 'string',
  value: 'FILE',
  help: 'A JSON object mapping each tenant (school) to its secret or list of secrets, instead of --secret',
} as const satisfies OptionSpec;

/** The placeholder of `send --url` that `--tenant` replaces. */
export const TENANT_PLACEHOLDER = '{tenant}';

/**
 * Read and check `--secrets-file`: a JSON object whose keys are tenants and whose values are a
 * secret or a non-empty list of them, each passing the receiver's own rule (`assertSecret`).
 * Every mistake is a {@link UsageError} that names the file, the tenant and the secret's place in
 * its list, never a value (not even JSON's own parse message, which quotes the text). A secret
 * with whitespace around it is kept as given, with a warning on stderr.
 */
export async function readSecretsFile(
  file: string,
  io: Pick<CliIo, 'err'>,
  command: string,
): Promise<TenantSecretMap> {
  const where = `--secrets-file ${file}`;
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new UsageError(`${where}: cannot read it (${messageOf(error)})`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`${where}: not valid JSON${jsonErrorPlace(text, error)}`);
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    throw new UsageError(
      `${where}: must be a JSON object mapping each tenant to its secret or list of secrets ` +
        '({ "school-a": "…", "school-b": ["…", "…"] })',
    );
  }
  const tenants = new Map<string, string[]>();
  for (const [tenant, value] of Object.entries(json as Record<string, unknown>)) {
    tenants.set(tenant, tenantSecrets(where, tenant, value, io, command));
  }
  if (tenants.size === 0) throw new UsageError(`${where}: names no tenant`);
  return tenants;
}

/** One tenant's entry of the file, checked; `where` names the file in messages. */
function tenantSecrets(
  where: string,
  tenant: string,
  value: unknown,
  io: Pick<CliIo, 'err'>,
  command: string,
): string[] {
  const problem = tenantNameProblem(tenant);
  if (problem !== undefined) throw new UsageError(`${where}: ${problem}`);
  const secrets = typeof value === 'string' ? [value] : value;
  if (!Array.isArray(secrets)) {
    throw new UsageError(
      `${where}: tenant ${quotedTenant(tenant)} must map to a secret (a string) or a list of them, not ${
        value === null ? 'null' : typeof value
      }`,
    );
  }
  if (secrets.length === 0) {
    throw new UsageError(`${where}: tenant ${quotedTenant(tenant)} has an empty list of secrets`);
  }
  secrets.forEach((secret: unknown, i) => {
    const name =
      typeof value === 'string'
        ? `the secret of tenant ${quotedTenant(tenant)} (${where})`
        : `secret #${i + 1} of tenant ${quotedTenant(tenant)} (${where})`;
    checkSecret(secret, name, io, command);
  });
  return [...(secrets as string[])];
}

/**
 * Why `tenant` cannot be a tenant, or undefined: it must be a tenant name the receiver takes
 * (`isTenantName`: else every delivery for it would be 404), and a whole path segment of its own,
 * so not `.` or `..` (which a URL resolves away).
 */
export function tenantNameProblem(tenant: string): string | undefined {
  if (tenant === '') return 'a tenant name is empty';
  if (!isTenantName(tenant)) {
    return (
      `${quotedTenant(tenant)} is not a tenant name (over ${MAX_TENANT_LENGTH} characters, ` +
      'or with U+0000 or a lone surrogate)'
    );
  }
  if (tenant === '.' || tenant === '..') {
    return `${quotedTenant(tenant)} cannot be a tenant: a URL resolves it away`;
  }
  return undefined;
}

/**
 * Where JSON.parse stopped, as ` (line L, column C)`, from the numbers of its message alone: the
 * message itself quotes the text around the error, which may be a secret.
 */
function jsonErrorPlace(text: string, error: unknown): string {
  const message = messageOf(error);
  const lineColumn = /line (\d+) column (\d+)/.exec(message);
  if (lineColumn) return ` (line ${lineColumn[1]}, column ${lineColumn[2]})`;
  const position = /position (\d+)/.exec(message);
  if (!position) return '';
  const before = text.slice(0, Number(position[1])).split('\n');
  return ` (line ${before.length}, column ${(before.at(-1)?.length ?? 0) + 1})`;
}

/**
 * The tenant a request URL names below `base` (`--path`, `/` by default): the one non-empty path
 * segment after it, percent-decoded, query string aside; undefined for any other URL.
 *
 * @example
 * ```ts
 * tenantOfUrl('/webhooks/school', '/webhooks/school/school%20a?x=1'); // 'school a'
 * tenantOfUrl('/webhooks/school', '/webhooks/school/a/b'); // undefined
 * ```
 */
export function tenantOfUrl(base: string, url: string): string | undefined {
  const prefix = base.endsWith('/') ? base : `${base}/`;
  const path = url.split('?', 1)[0] ?? '';
  if (!path.startsWith(prefix)) return undefined;
  const segment = path.slice(prefix.length);
  if (segment === '' || segment.includes('/')) return undefined;
  try {
    return decodeURIComponent(segment);
  } catch {
    // A malformed escape (`%E0%A4%A`) names no tenant.
    return undefined;
  }
}

/** The path of `tenant`'s deliveries below `base`: `/webhooks/school/school%20a`. */
export function tenantPath(base: string, tenant: string): string {
  return `${base.endsWith('/') ? base : `${base}/`}${encodeURIComponent(tenant)}`;
}

/**
 * The URL `send --tenant` posts to: `{tenant}` in `url` replaced by the percent-encoded tenant, or,
 * without one, the tenant appended as the last path segment (the query string kept).
 *
 * @example
 * ```ts
 * tenantUrl('http://localhost:3000/webhooks/school', 'a'); // 'http://localhost:3000/webhooks/school/a'
 * tenantUrl('http://localhost:3000/{tenant}/hooks', 'a'); // 'http://localhost:3000/a/hooks'
 * ```
 */
export function tenantUrl(url: string, tenant: string): string {
  const segment = encodeURIComponent(tenant);
  if (url.includes(TENANT_PLACEHOLDER)) return url.replaceAll(TENANT_PLACEHOLDER, () => segment);
  const parsed = new URL(url);
  parsed.pathname = tenantPath(parsed.pathname, tenant);
  return parsed.href;
}

/**
 * A tenant as the CLI prints it: as it is when plain, else as a JSON string (spaces, quotes and
 * control characters shown, never acted on by a terminal), cut after 100 characters: it comes
 * from a request's URL, which anyone can send.
 */
export function tenantText(tenant: string): string {
  const quoted = quotedTenant(tenant);
  // Between the quotes: the tenant as it is (cut), when JSON escaped nothing in it.
  const plain = quoted.slice(1, -1);
  return /^[\w@%+=:,.-]+$/.test(plain) ? plain : quoted;
}

export { quotedTenant };
