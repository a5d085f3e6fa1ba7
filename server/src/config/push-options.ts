import { z } from 'zod';
import { secret } from './option-values.ts';

/** Push delivery through APNs and FCM (`push`). */
export const pushSchema = z
  .object({
    apns: z
      .object({
        keyId: z.string().min(1).describe('The key id of the APNs auth key (.p8).'),
        teamId: z.string().min(1).describe('The Apple developer team id.'),
        key: secret(z.string().includes('PRIVATE KEY', { message: 'must be a PEM private key' })).describe(
          'The APNs auth key itself (PEM).',
        ),
        topic: z.string().min(1).describe("The app's bundle id (apns-topic)."),
        production: z.boolean().default(false).describe("Apple's production endpoint (false: the sandbox)."),
        url: secret(z.string().url(), 'url')
          .optional()
          .describe("Another endpoint than Apple's (tests: a local fake)."),
      })
      .strict()
      .optional()
      .describe('APNs with token auth (an auth key of the Apple developer account).'),
    fcm: z
      .object({
        projectId: z.string().min(1).describe("The service account's project_id."),
        clientEmail: z.string().min(1).describe("The service account's client_email."),
        privateKey: secret(
          z.string().includes('PRIVATE KEY', { message: 'must be a PEM private key' }),
        ).describe("The service account's private_key (PEM)."),
        url: secret(z.string().url(), 'url')
          .optional()
          .describe("Another endpoint than Google's (tests: a local fake)."),
        tokenUrl: secret(z.string().url(), 'url')
          .optional()
          .describe("Another token endpoint than Google's (tests: a local fake)."),
      })
      .strict()
      .optional()
      .describe('FCM HTTP v1, from a service account JSON.'),
    concurrency: z
      .number()
      .int()
      .min(1)
      .max(1000)
      .default(100)
      .describe('Deliveries in flight at once, per provider.'),
    batchSize: z
      .number()
      .int()
      .min(1)
      .max(10_000)
      .default(1000)
      .describe('Installations read per page while a push runs.'),
  })
  .strict()
  .refine((p) => p.apns !== undefined || p.fcm !== undefined, { message: 'needs apns or fcm' });
