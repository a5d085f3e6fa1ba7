import { z } from 'zod';
import { limit, pathPattern } from './option-values.ts';

/**
 * Per IP: password checks (login, verifyPassword: one counter) and sign-ups 30 a minute, password
 * reset and verification mail 5 a minute.
 */
export const DEFAULT_RATE_LIMITS = [
  {
    path: '^/(login|verifyPassword)$',
    methods: ['GET', 'POST'] as const,
    window: 60,
    max: 30,
    by: 'ip' as const,
  },
  { path: '^/(users|classes/_User)$', methods: ['POST'] as const, window: 60, max: 30, by: 'ip' as const },
  {
    path: '^/(requestPasswordReset|verificationEmailRequest)$',
    methods: ['POST'] as const,
    window: 60,
    max: 5,
    by: 'ip' as const,
  },
].map((rule) => ({ ...rule, methods: [...rule.methods] }));

/** Rate limit rules (`rateLimit`), each over the paths of one regular expression. */
export const rateLimitSchema = z.array(
  z
    .object({
      path: pathPattern,
      methods: z.array(z.enum(['GET', 'POST', 'PUT', 'DELETE'])).optional(),
      window: z.number().positive(),
      max: z.number().int().positive(),
      by: z.enum(['ip', 'user', 'session']).default('ip'),
      error: z.string().min(1).optional(),
    })
    .strict(),
);

/** Bounds on what one request may ask for (`requestComplexity`). */
export const requestComplexitySchema = z
  .object({
    includeDepth: limit.default(10).describe('Deepest include path (a.b.c is 3).'),
    includeCount: limit.default(100).describe('Most include paths in one query.'),
    subqueryDepth: limit
      .default(10)
      .describe('Deepest nesting of subqueries ($inQuery, $select and the like).'),
    queryDepth: limit.default(10).describe('Deepest nesting of $and, $or and $nor.'),
    batchRequestLimit: limit.default(100).describe('Most requests in one batch.'),
  })
  .strict();

/** Requests run once per request id (`idempotency`). */
export const idempotencySchema = z
  .object({
    paths: z
      .array(pathPattern)
      .min(1)
      .describe('Regular expressions over the path after the mount path, e.g. `classes/.*`.'),
    ttl: z.number().int().positive().default(300).describe('Seconds a request id is remembered.'),
  })
  .strict();
