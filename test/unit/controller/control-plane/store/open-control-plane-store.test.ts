import { describe, expect, it } from 'vitest';
import { parseServeOptions } from '../../../../../controller/control-plane/cli/serve/serve-options.js';
import { isControlPlaneError } from '../../../../../controller/control-plane/domain/control-plane-error.js';
import { openControlPlaneStore, resolveDatabaseOption } from '../../../../../controller/control-plane/store/open-control-plane-store.js';
import { redactDatabaseUrl } from '../../../../../controller/control-plane/store/postgres/open-postgres-store.js';

describe('choosing the store', () => {
  it('takes --database before DATABASE_URL, and neither means SQLite', () => {
    expect(resolveDatabaseOption('postgres://a@h/db', { DATABASE_URL: 'postgresql://b@h/db' })).toBe('postgres://a@h/db');
    expect(resolveDatabaseOption(undefined, { DATABASE_URL: 'postgresql://b@h/db' })).toBe('postgresql://b@h/db');
    expect(resolveDatabaseOption(undefined, { DATABASE_URL: '' })).toBeUndefined();
    expect(resolveDatabaseOption(undefined, {})).toBeUndefined();
  });

  it('refuses a URL that is not PostgreSQL, naming where it came from and hiding the password', () => {
    expect(() => resolveDatabaseOption('mysql://root:hunter2@db/x', {})).toThrow(/--database must be a postgres:\/\/.*"mysql:\/\/root:\*\*\*@db\/x"/);
    expect(() => resolveDatabaseOption(undefined, { DATABASE_URL: '/var/lib/data' })).toThrow(/DATABASE_URL must be a postgres:\/\//);
    expect(() => parseServeOptions(['--agents', 'a.json', '--database', 'sqlite:///x'], {})).toThrow(expect.objectContaining({ code: 'invalid_request' }));
    const options = parseServeOptions(['--agents', 'a.json'], { DATABASE_URL: 'postgres://u:p@h:5432/d' });
    expect(options).toMatchObject({ database: 'postgres://u:p@h:5432/d', claimExpirySeconds: 60 });
    expect(() => parseServeOptions(['--agents', 'a.json', '--claim-expiry-s', '0'], {})).toThrow(/--claim-expiry-s must be an integer of at least 1/);
    expect(redactDatabaseUrl('postgres://u:secret@h:5432/d')).toBe('postgres://u:***@h:5432/d');
  });

  it('fails to open an unreachable PostgreSQL with a clear, redacted reason', async () => {
    const error = await openControlPlaneStore({ database: 'postgres://u:secret@127.0.0.1:1/d', dataDir: '/nonexistent' }).catch((caught: unknown) => caught);
    expect(isControlPlaneError(error, 'unavailable')).toBe(true);
    expect((error as Error).message).toMatch(/^cannot open the control-plane store postgres:\/\/u:\*\*\*@127\.0\.0\.1:1\/d: /);
    expect((error as Error).message).not.toMatch(/secret/);
  });
});
