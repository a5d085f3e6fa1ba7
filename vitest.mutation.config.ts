import { defineConfig } from 'vitest/config';

/**
 * The tests `npm run test:mutation` (Stryker, stryker.config.json) runs against its mutants.
 * MUTATION_SCOPE picks the tests of one target (a mutant that runs at import or in a beforeAll
 * runs every test of the scope, so a smaller scope is much faster); unset, all of them.
 * Stryker's vitest runner runs them in threads, one file at a time per worker.
 */
const SCOPES: Record<string, string[]> = {
  access: [
    'server/test/access*.test.ts',
    'server/test/clp-count-and-related-to.test.ts',
    'server/test/mutation-access.test.ts',
    'server/test/permission-matrix.test.ts',
    'server/test/protected.test.ts',
    'server/test/roles.test.ts',
    'server/test/requires-authentication.test.ts',
    // The probes of the security review, by subject.
    'server/test/users/hidden-columns.test.ts',
    'server/test/master-only.test.ts',
    'server/test/record-access.test.ts',
    'server/test/name-injection.test.ts',
    'server/test/installations.test.ts',
    'server/test/users/sessions.test.ts',
  ],
  auth: [
    'server/test/caller-cache.test.ts',
    'server/test/users/sessions.test.ts',
    'server/test/roles.test.ts',
    'server/test/credentials.test.ts',
    'server/test/requires-authentication.test.ts',
    // The probes of the security review, by subject.
    'server/test/users/hidden-columns.test.ts',
    'server/test/master-only.test.ts',
    'server/test/record-access.test.ts',
    'server/test/name-injection.test.ts',
    'server/test/installations.test.ts',
  ],
  users: [
    'server/test/users/*.test.ts',
    'server/test/caller-cache.test.ts',
    // Its login-trigger test is what runs the trigger branch of Users.logIn.
    'server/test/cloud-triggers.test.ts',
  ],
  session: ['bff/test/session*.test.ts'],
};

const scope = process.env.MUTATION_SCOPE;
if (scope && !SCOPES[scope])
  throw new Error(`MUTATION_SCOPE must be one of ${Object.keys(SCOPES).join(', ')}`);

export default defineConfig({
  test: {
    include: scope ? SCOPES[scope] : [...new Set(Object.values(SCOPES).flat())],
    testTimeout: 20_000,
    hookTimeout: 30_000,
  },
});
