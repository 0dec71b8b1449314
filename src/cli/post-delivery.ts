/**
 * One signed POST to a receiver, as the platform sends it.
 * @module
 */

import { isSuccessStatus, PLATFORM_LIMITS } from '../testing/platform-limits.js';
import { signBody } from '../testing/sign-body.js';
import { CliFailure, messageOf } from './command.js';

/** What the receiver answered. */
export interface PostResult {
  status: number;
  /** The answer body as text, cut to a readable length. */
  text: string;
  /** Whether the platform would count it delivered (200, 201 or 202). */
  ok: boolean;
  /** `outcome` of a schoolhooks receiver's JSON answer. */
  outcome: string | undefined;
}

const MAX_TEXT = 2_000;

/** POST `body` to `url`, signed with `secret`; a network error or timeout is a {@link CliFailure}. */
export async function postDelivery(
  url: string,
  body: string | Uint8Array,
  secret: string,
): Promise<PostResult> {
  let response: Response;
  let text: string;
  try {
    response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', signature: signBody(body, secret) },
      // A copy typed as fetch wants it (an ArrayBuffer-backed view).
      body: typeof body === 'string' ? body : new Uint8Array(body),
      redirect: 'manual',
      signal: AbortSignal.timeout(PLATFORM_LIMITS.responseTimeoutMs),
    });
    text = await response.text();
  } catch (error) {
    if (error instanceof Error && error.name === 'TimeoutError') {
      throw new CliFailure(
        `${url}: no answer within ${PLATFORM_LIMITS.responseTimeoutMs / 1000} s (the platform's timeout)`,
      );
    }
    const cause =
      error instanceof Error && error.cause instanceof Error
        ? error.cause.message
        : messageOf(error);
    throw new CliFailure(`${url}: ${cause}`);
  }
  return {
    status: response.status,
    text: text.length > MAX_TEXT ? `${text.slice(0, MAX_TEXT)}…` : text,
    ok: isSuccessStatus(response.status),
    outcome: outcomeOf(text),
  };
}

function outcomeOf(text: string): string | undefined {
  try {
    const body: unknown = JSON.parse(text);
    const outcome = (body as { outcome?: unknown } | null)?.outcome;
    return typeof outcome === 'string' ? outcome : undefined;
  } catch {
    return undefined;
  }
}
