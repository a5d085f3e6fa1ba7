import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InProcessEventBus } from '../src/data/events.ts';
import { Router } from '../src/http/router.ts';
import { MASTER } from '../src/kernel/caller.ts';
import type { PendingWrite, WriteEvent } from '../src/kernel/events.ts';
import { HookRegistry } from '../src/kernel/hooks.ts';
import { silentLogger } from '../src/kernel/log.ts';
import { startService, type TestService } from './helpers/service.ts';

/**
 * The service's hooks are bound in one place (createService, server/src/index.ts), each with a name
 * and a priority; this file lists every chain in the order it runs, as write-events lists the
 * events. A new binding is one more entry here.
 */
describe('the hook chains of a started service', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startService();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('lists each chain in the order it runs', () => {
    expect(t.service.core.hooks.list()).toEqual({
      writeRules: [
        { name: 'webhook registrations (_Hooks)', priority: 10 },
        { name: 'job schedules (_JobSchedule)', priority: 20 },
      ],
      beforeWrite: [{ name: 'cloud code, then webhooks', priority: 10 }],
      find: [{ name: 'cloud code', priority: 10 }],
      account: [{ name: 'cloud code', priority: 10 }],
      fileUrl: [{ name: 'files', priority: 10 }],
    });
  });

  it('lists the after-commit listeners by phase: caches, then fan-out, then side effects', () => {
    expect(t.service.core.events.listeners()).toEqual([
      { name: 'caller caches', phase: 'caches' },
      { name: 'webhook registry', phase: 'caches' },
      { name: 'realtime', phase: 'fanOut' },
      { name: 'after-write triggers', phase: 'sideEffects' },
      { name: 'job scheduler', phase: 'sideEffects' },
    ]);
  });

  it('is read-only once started: the core cannot be assigned and no hook can be bound', () => {
    const core = t.service.core as unknown as Record<string, unknown>;
    expect(() => {
      core.store = undefined;
    }).toThrow(TypeError);
    expect(() => {
      core.hooks = new HookRegistry();
    }).toThrow(TypeError);
    expect(() =>
      t.service.core.hooks.beforeWrite.bind('late', 0, {
        hasBefore: () => true,
        before: async () => undefined,
      }),
    ).toThrow('The beforeWrite hooks are sealed: bind them in createService, before the service starts.');
    expect(t.service.core.hooks.list().beforeWrite).toEqual([
      { name: 'cloud code, then webhooks', priority: 10 },
    ]);
  });

  it('gives the account routes precedence over the record routes of the same path, whatever their order', () => {
    const routes = t.service.routes();
    const keys = routes.map((r) => `${r.method} ${r.pattern} ${r.precedence}`);
    // No two routes of one method and pattern share a precedence: registration order decides nothing.
    expect(keys.filter((key, i) => keys.indexOf(key) !== i)).toEqual([]);
    const of = (method: string, pattern: string) =>
      routes.filter((r) => r.method === method && r.pattern === pattern).map((r) => r.precedence);
    expect(of('POST', '/users')).toEqual([1, 0]);
    expect(of('PUT', '/users/:objectId')).toEqual([1, 0]);
    expect(of('GET', '/sessions')).toEqual([1, 0]);
    expect(of('POST', '/classes/_User')).toEqual([1]);
  });
});

describe('a hook chain', () => {
  const write = (body: Record<string, unknown>): PendingWrite => ({
    op: 'create',
    className: 'Note',
    objectId: null,
    body,
    original: null,
    caller: MASTER,
    source: 'rest',
    context: {},
  });
  const appending = (mark: string) => ({
    hasBefore: (className: string) => className === 'Note',
    before: async (w: PendingWrite) => ({ ...w.body, trail: `${w.body?.trail ?? ''}${mark}` }),
  });

  it('runs its hooks by priority, lowest first, whatever the order they were bound in', async () => {
    const hooks = new HookRegistry();
    hooks.writeRules.bind('second', 20, appending('b'));
    hooks.writeRules.bind('first', 10, appending('a'));
    hooks.writeRules.bind('also second', 20, appending('c'));
    expect(hooks.list().writeRules).toEqual([
      { name: 'first', priority: 10 },
      { name: 'second', priority: 20 },
      { name: 'also second', priority: 20 },
    ]);
    expect(hooks.writeRules.hasBefore('Note', 'create')).toBe(true);
    expect(hooks.writeRules.hasBefore('Other', 'create')).toBe(false);
    expect(await hooks.writeRules.before(write({ title: 'x' }))).toEqual({ title: 'x', trail: 'abc' });
  });

  it('refuses a name bound twice, a second file url builder, and any binding once sealed', () => {
    const hooks = new HookRegistry();
    hooks.beforeWrite.bind('cloud', 10, appending('a'));
    expect(() => hooks.beforeWrite.bind('cloud', 20, appending('b'))).toThrow(
      'cloud is bound to the beforeWrite hooks twice.',
    );
    hooks.fileUrl.bind('files', 10, (name) => `/files/${name}`);
    expect(() => hooks.fileUrl.bind('other files', 20, (name) => name)).toThrow(
      'The fileUrl hook takes one binding: files is bound already.',
    );
    hooks.seal();
    expect(() => hooks.find.bind('late', 10, { hasFind: () => false } as never)).toThrow(
      'The find hooks are sealed: bind them in createService, before the service starts.',
    );
  });
});

describe('the event bus', () => {
  const event: WriteEvent = {
    op: 'create',
    className: 'Note',
    objectId: 'n1',
    before: null,
    after: { objectId: 'n1' },
    caller: MASTER,
    source: 'rest',
    context: {},
  };

  it('calls its listeners in phase order whatever the order they subscribed in', () => {
    const bus = new InProcessEventBus(silentLogger());
    const calls: string[] = [];
    bus.subscribe(() => calls.push('observer'));
    bus.subscribe(() => calls.push('effect'), { name: 'effect', phase: 'sideEffects' });
    const off = bus.subscribe(() => calls.push('fan-out'), { name: 'fan-out', phase: 'fanOut' });
    bus.subscribe(() => calls.push('cache'), { name: 'cache', phase: 'caches' });
    bus.publish(event);
    expect(calls).toEqual(['cache', 'fan-out', 'observer', 'effect']);
    expect(bus.listeners()).toEqual([
      { name: 'cache', phase: 'caches' },
      { name: 'fan-out', phase: 'fanOut' },
      { name: 'unnamed', phase: 'sideEffects' },
      { name: 'effect', phase: 'sideEffects' },
    ]);
    off();
    calls.length = 0;
    bus.publish(event);
    expect(calls).toEqual(['cache', 'observer', 'effect']);
  });
});

describe('routes', () => {
  const answering = (name: string) => async () => ({ body: name });

  it('prefer a literal segment to a parameter, whatever the order they were added in', async () => {
    const router = new Router()
      .add('GET', '/classes/:className/:objectId', answering('record'))
      .add('GET', '/classes/_User/:objectId', answering('account'))
      .add('GET', '/users/:objectId', answering('user'))
      .add('GET', '/users/me', answering('me'));
    expect(await router.match('GET', '/classes/_User/u1')?.handler({} as never)).toEqual({ body: 'account' });
    expect(await router.match('GET', '/classes/Post/p1')?.handler({} as never)).toEqual({ body: 'record' });
    expect(await router.match('GET', '/users/me')?.handler({} as never)).toEqual({ body: 'me' });
    expect(await router.match('GET', '/users/u1')?.handler({} as never)).toEqual({ body: 'user' });
  });

  it('answer a path two routes share with the one of higher precedence, whatever the order they were added in', async () => {
    const router = new Router()
      .add('POST', '/users', answering('record'))
      .add('POST', '/users', answering('account'), 1);
    expect(await router.match('POST', '/users')?.handler({} as never)).toEqual({ body: 'account' });
    expect(router.routes()).toEqual([
      { method: 'POST', pattern: '/users', precedence: 1 },
      { method: 'POST', pattern: '/users', precedence: 0 },
    ]);
  });
});
