/**
 * `UserAcquainted`: the user completed onboarding.
 * @module
 */

import { userSignedUpDataSchema, type UserSignedUpData } from './user-signed-up.js';

/** `data` of `UserAcquainted`: the same contract, and the same schema, as `UserSignedUp`. */
export const userAcquaintedDataSchema = userSignedUpDataSchema;
/** `data` of `UserAcquainted`. */
export type UserAcquaintedData = UserSignedUpData;
