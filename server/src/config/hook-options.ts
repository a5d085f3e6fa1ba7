import { z } from 'zod';

/** Webhook calls: receivers, timeouts, retries and the delivery log (`hooks`). */
export const hooksSchema = z
  .object({
    allowInsecureUrls: z
      .boolean()
      .default(false)
      .describe('Plain http receivers (tests and local development only; the service warns at start).'),
    trustedCA: z
      .string()
      .min(1)
      .optional()
      .describe('A PEM certificate (the text or a file path) trusted for receivers, besides the system CAs.'),
    timeoutMs: z
      .number()
      .int()
      .min(1)
      .max(120_000)
      .default(10_000)
      .describe('How long a call to a receiver may take, in milliseconds.'),
    retries: z
      .number()
      .int()
      .min(0)
      .max(10)
      .default(3)
      .describe(
        'Further attempts of an after-hook delivery that failed in transit (timeout, 5xx, unreachable).',
      ),
    retryBackoffMs: z
      .number()
      .int()
      .min(1)
      .max(600_000)
      .default(1000)
      .describe('Wait before the first retry; it doubles for each next one.'),
    deliveryLogSize: z
      .number()
      .int()
      .min(1)
      .max(100_000)
      .default(1000)
      .describe('Deliveries kept in the master-only delivery log (the oldest go first).'),
  })
  .strict();
