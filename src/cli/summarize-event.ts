/**
 * A one-line summary of an event for `listen` to print: ids, names, amounts, statuses. Never an
 * email, a phone number or anything secret.
 * @module
 */

/**
 * The summary of a verified envelope's `data`, e.g. `user 1937465, course "Spoken English",
 * 4900 RUB`. Reads defensively: the data of unknown events has no contract.
 */
export function summarizeEvent(data: unknown): string {
  const parts: string[] = [];
  const payment = at(data, 'payment');
  const invoice = at(payment, 'invoice');
  const userId = at(at(data, 'user'), 'id') ?? at(at(invoice, 'user'), 'id');
  if (isScalar(userId)) parts.push(`user ${userId}`);
  const courseName = at(at(data, 'course'), 'name');
  if (typeof courseName === 'string') parts.push(`course "${clip(courseName)}"`);
  const amount = at(invoice, 'totalAmount');
  const currency = at(invoice, 'currency');
  if (typeof amount === 'number')
    parts.push(`${amount}${typeof currency === 'string' ? ` ${clip(currency)}` : ''}`);
  const paymentStatus = at(payment, 'status');
  if (typeof paymentStatus === 'string') parts.push(`payment ${clip(paymentStatus)}`);
  const status = at(data, 'status');
  if (typeof status === 'string') parts.push(`status ${clip(status)}`);
  const lessonId = at(data, 'lessonId');
  if (isScalar(lessonId)) parts.push(`lesson ${lessonId}`);
  const certificateId = at(at(data, 'certificate'), 'id');
  if (isScalar(certificateId)) parts.push(`certificate ${certificateId}`);
  const inviteLinkId = at(data, 'inviteLinkId');
  if (isScalar(inviteLinkId)) parts.push(`invite link ${inviteLinkId}`);
  const prevTgId = at(data, 'prevTgId');
  if (prevTgId !== undefined) parts.push(`previous tgId ${String(prevTgId)}`);
  return parts.join(', ');
}

function at(value: unknown, key: string): unknown {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)[key]
    : undefined;
}

function isScalar(value: unknown): value is string | number {
  return typeof value === 'number' || (typeof value === 'string' && value.length <= 64);
}

function clip(text: string): string {
  return text.length > 40 ? `${text.slice(0, 39)}…` : text;
}
