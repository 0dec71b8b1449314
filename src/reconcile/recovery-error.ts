/**
 * The error of an entity a reconcile run could not recover, as its report lists it.
 * @module
 */

import { SchoolhooksError, withCauses } from '../errors.js';
import type { ReconcileKind } from './types.js';

/** Why a recovery failed, as a stable code. */
export type RecoveryFailureCode =
  /** The handler threw or rejected. */
  | 'handler_failed'
  /** The handler still ran at `handlerTimeoutMs`. */
  | 'timeout'
  /** The store could not claim, record or free the entity's record. */
  | 'store_unavailable'
  /** The list item did not match its schema: no handler ran. */
  | 'invalid_payload';

/**
 * An entity a run did not recover: `kind` and `id` say which, `code` why, `cause` what was thrown.
 * Its message names all three, the cause's words on one bounded line
 * (`invoice 877051: the invoice handler failed: crm hiccup`). The next run tries it again.
 *
 * @example
 * ```ts
 * for (const { error } of report.failed) logger.warn({ code: error.code }, error.message);
 * ```
 */
export class RecoveryError extends SchoolhooksError {
  override name = 'RecoveryError' as const;
  declare readonly code: RecoveryFailureCode;
  /** The entity's kind. */
  readonly kind: ReconcileKind;
  /** Its id within its kind, as text (a list position, `#12`, for an item without a usable id). */
  readonly id: string;

  constructor(
    code: RecoveryFailureCode,
    kind: ReconcileKind,
    id: string,
    what: string,
    cause?: unknown,
  ) {
    super(
      code,
      withCauses(`${kind} ${id}: ${what}`, cause),
      cause === undefined ? undefined : { cause },
    );
    this.kind = kind;
    this.id = id;
  }
}
