import { fileURLToPath } from 'node:url';
import type { TestService } from './service.ts';

/** The tests' cloud module (functions, jobs, triggers that leave TriggerLog rows). */
export const CLOUD_MODULE = fileURLToPath(new URL('../fixtures/cloud-module.ts', import.meta.url));

/** A job's status row once every job under way has finished. */
export async function finished(t: TestService, id: string) {
  await t.service.jobs.runner.idle();
  return (await t.request('GET', `/classes/_JobStatus/${id}`, { as: 'master' })).json;
}
