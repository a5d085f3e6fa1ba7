import type express from 'express';
import type { BffContext } from '../context.ts';

/** Placeholder until built. */
export function registerSecurityRoutes(_router: express.Router, _ctx: BffContext): void {}
