/**
 * The `--database` value: the flag, else `DATABASE_URL`, else undefined (SQLite). The one rule
 * every controller command follows. Kept apart from the store modules (pg, kysely,
 * better-sqlite3) because `npm start` parses its flags before it spawns the sidecar, and must not
 * load those first.
 *
 * @throws Error naming the value when it is not a PostgreSQL URL (the password left out).
 */
export function resolveDatabaseOption(flag: string | undefined, env: NodeJS.ProcessEnv): string | undefined {
  const value = flag ?? (env.DATABASE_URL || undefined);
  if (value === undefined) return undefined;
  if (!/^postgres(ql)?:\/\//i.test(value)) {
    const from = flag !== undefined ? '--database' : 'DATABASE_URL';
    throw new Error(`${from} must be a postgres:// or postgresql:// URL (got "${value.replace(/:[^:@/]*@/, ':***@')}"); leave it out for the embedded SQLite store in --data-dir`);
  }
  return value;
}
