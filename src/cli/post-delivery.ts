/**
 * One signed POST to a receiver, as the platform sends it.
 * @module
 */

import { outcomeOfText, postAsPlatform } from '../testing/exchange.js';
import { isSuccessStatus, PLATFORM_LIMITS, SECOND } from '../platform/platform-contract.js';
import { signBody } from '../testing/sign-body.js';
import { CliFailure, messageOf } from './command.js';

/** What the receiver answered. */
export interface PostResult {
  status: number;
  /** The answer body as text, cut to a readable length. */
  text: string;
  /** Whether the platform would count it delivered (`isSuccessStatus`). */
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
  const sent = await postAsPlatform(
    url,
    { 'content-type': 'application/json', signature: signBody(body, secret) },
    // A copy typed as fetch wants it (an ArrayBuffer-backed view).
    typeof body === 'string' ? body : new Uint8Array(body),
    PLATFORM_LIMITS.responseTimeoutMs,
  );
  if (sent.status === null) {
    if (sent.timedOut) {
      throw new CliFailure(
        `${url}: no answer within ${PLATFORM_LIMITS.responseTimeoutMs / SECOND} s (the platform's timeout)`,
      );
    }
    const { error } = sent;
    const cause =
      error instanceof Error && error.cause instanceof Error
        ? error.cause.message
        : messageOf(error);
    throw new CliFailure(`${url}: ${cause}`);
  }
  const { status, text } = sent;
  return {
    status,
    text: text.length > MAX_TEXT ? `${text.slice(0, MAX_TEXT)}…` : text,
    ok: isSuccessStatus(status),
    outcome: outcomeOfText(text),
  };
}
