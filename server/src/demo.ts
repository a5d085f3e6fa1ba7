import type { Service } from './index.ts';
import { MASTER } from './kernel/caller.ts';
import { ctxOf } from './kernel/context.ts';

/** A small demo data set, written once into an empty store. */
export async function seedDemoData(service: Service): Promise<boolean> {
  const { schemas } = service.core;
  if (schemas.get('Author')) return false;
  const { writes } = service.data;
  const master = ctxOf(MASTER, 'system');
  const authors: string[] = [];
  for (const [name, city] of [
    ['Ada Lovelace', 'London'],
    ['Grace Hopper', 'New York'],
    ['Edsger Dijkstra', 'Rotterdam'],
  ] as const) {
    const { objectId } = await writes.create(master, 'Author', { name, city, ACL: { '*': { read: true } } });
    authors.push(objectId);
  }
  const places: Array<[string, number, number]> = [
    ['London', 51.5072, -0.1276],
    ['New York', 40.7128, -74.006],
    ['Rotterdam', 51.9244, 4.4777],
  ];
  for (let i = 0; i < 12; i++) {
    const [place, latitude, longitude] = places[i % places.length]!;
    await writes.create(master, 'Post', {
      title: `Demo post ${i + 1}`,
      body: `Written near ${place}.`,
      likes: (i * 7) % 23,
      tags: i % 2 ? ['demo', 'odd'] : ['demo', 'even'],
      publishedAt: { __type: 'Date', iso: new Date(Date.UTC(2026, 0, 1 + i)).toISOString() },
      location: { __type: 'GeoPoint', latitude, longitude },
      author: { __type: 'Pointer', className: 'Author', objectId: authors[i % authors.length] },
      ACL: { '*': { read: true } },
    });
  }
  return true;
}
