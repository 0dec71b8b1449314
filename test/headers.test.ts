import { describe, expect, it } from 'vitest';
import { getHeader } from '../src/receiving/request.js';

describe('getHeader', () => {
  it('reads a Fetch Headers object, and gives undefined for a header it lacks', () => {
    const headers = new Headers({ Signature: 'abc' });
    expect(getHeader(headers, 'signature')).toBe('abc');
    expect(getHeader(headers, 'content-type')).toBeUndefined();
  });

  it('reads a plain object under its lowercase name or in any letter case', () => {
    expect(getHeader({ signature: 'lower' }, 'signature')).toBe('lower');
    expect(getHeader({ SIGNATURE: 'upper' }, 'signature')).toBe('upper');
    expect(getHeader({ 'Content-Type': 'application/json' }, 'content-type')).toBe(
      'application/json',
    );
  });

  it('prefers the exact lowercase name over another spelling', () => {
    expect(getHeader({ Signature: 'other', signature: 'exact' }, 'signature')).toBe('exact');
  });

  it('takes the first of two other spellings, as it finds them', () => {
    expect(getHeader({ Signature: 'first', SIGNATURE: 'second' }, 'signature')).toBe('first');
  });

  it('does not read a header whose name only starts or ends like the one asked for', () => {
    expect(getHeader({ 'Signature-Old': 'x', 'X-Signature': 'y' }, 'signature')).toBeUndefined();
  });

  it('does not read another header whose name is just as long', () => {
    expect('X-Request'.length).toBe('signature'.length);
    expect(getHeader({ 'X-Request': 'id-1' }, 'signature')).toBeUndefined();
    expect(getHeader({ 'X-Request': 'id-1', Signature: 'abc' }, 'signature')).toBe('abc');
  });

  it('takes the first value of a repeated header given as an array', () => {
    expect(getHeader({ signature: ['first', 'second'] }, 'signature')).toBe('first');
    expect(getHeader({ Signature: ['first', 'second'] }, 'signature')).toBe('first');
  });

  it('gives undefined for a value that is not a string, and for no headers at all', () => {
    expect(getHeader({ signature: undefined }, 'signature')).toBeUndefined();
    expect(getHeader({ signature: [] }, 'signature')).toBeUndefined();
    // A hand-built object may hold numbers, whatever its type says.
    expect(getHeader({ 'content-length': 12 } as never, 'content-length')).toBeUndefined();
    expect(getHeader(null, 'signature')).toBeUndefined();
    expect(getHeader(undefined, 'signature')).toBeUndefined();
  });
});
