import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { answerAtEndOfTurn, flushAnswers } from '../src/http/answers.ts';
import { startService } from './helpers/service.ts';

/** A response that records what it was ended with. */
function response(log: string[], name: string, destroyed = false) {
  return { destroyed, end: (text: string) => log.push(`${name}:${text}`) };
}

const endOfTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('answers are written at the end of the turn they became ready in', () => {
  it('waits for the end of the turn, then writes every answer of it in order', async () => {
    const log: string[] = [];
    answerAtEndOfTurn(response(log, 'a'), '1');
    await Promise.resolve();
    answerAtEndOfTurn(response(log, 'b'), '2');
    expect(log).toEqual([]);
    await endOfTurn();
    expect(log).toEqual(['a:1', 'b:2']);
  });

  it('writes each answer once, and answers of a later turn in that turn', async () => {
    const log: string[] = [];
    answerAtEndOfTurn(response(log, 'a'), '1');
    await endOfTurn();
    answerAtEndOfTurn(response(log, 'b'), '2');
    await endOfTurn();
    await endOfTurn();
    expect(log).toEqual(['a:1', 'b:2']);
  });

  it('flushAnswers writes at once, and skips a response whose caller went away', async () => {
    const log: string[] = [];
    answerAtEndOfTurn(response(log, 'gone', true), 'x');
    answerAtEndOfTurn(response(log, 'a'), '1');
    flushAnswers();
    expect(log).toEqual(['a:1']);
    await endOfTurn();
    expect(log).toEqual(['a:1']);
  });
});

describe('shutdown', () => {
  it('a request in flight when the service closes still gets its whole answer', async () => {
    const cloud = fileURLToPath(new URL('./fixtures/slow-cloud.ts', import.meta.url));
    const t = await startService({ cloud, shutdownGraceMs: 5_000 });
    try {
      const answer = t.request('POST', '/functions/slow', { body: { ms: 300 } });
      await new Promise((resolve) => setTimeout(resolve, 100));
      const closed = t.service.close();
      const res = await answer;
      expect(res.status).toBe(200);
      expect(res.json).toEqual({ result: 'done' });
      await closed;
    } finally {
      await t.close();
    }
  });
});
