/**
 * The receiver's own parts, for the bench (bench/fetch-steps.ts cuts the pipeline short step by
 * step; bench/same-work.ts does its work in a straight line with them) and for tests. Not part
 * of the package: no subpath of package.json's `exports` and no entry of tsup.config.ts leads
 * here, so none of it is in the build or its types (test/package/internal-entry.test.ts).
 * @module
 */

export { answer, DeliveryOutcome } from './receiving/delivery-outcome.js';
export { DeadlineQueue } from './utils/deadlines.js';
export {
  DeliveryPipeline,
  isWithinAgeWindow,
  type Arrival,
  type DeliveryRun,
  type PipelineConfig,
  type PipelineRequest,
  type Validated,
} from './receiving/pipeline.js';
export { checkOptions, type ReceiverSettings } from './receiving/receiver-settings.js';
export { isTimedOut, runHandlers, type AnyHandler } from './receiving/run-handlers.js';
export { Stages } from './receiving/pipeline.js';
