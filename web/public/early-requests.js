// Runs before the app's code has loaded (a classic script, like theme-init.js): starts the GET
// requests the first screen needs, so they travel while the bundle downloads and starts. The app
// takes each answer once, by its exact URL (takePreloaded in src/lib/api.ts); none is needed for
// correctness. A class opened by URL in its plain view (no filter, default sort) also gets its
// first rows, its own schema, its count and the schema list (slower: it counts every class); the
// URLs are the ones src/features/data-browser builds.
(() => {
  if (!location.pathname.startsWith('/apps/')) return;
  const urls = ['/bff/session'];
  const m = /^\/apps\/([^/]+)\/data\/([A-Za-z0-9_]+)\/?$/.exec(location.pathname);
  const q = new URLSearchParams(location.search);
  if (m && !q.has('where') && !q.has('sort')) {
    const app = `/bff/apps/${m[1]}`;
    urls.push(
      `${app}/classes/${m[2]}?order=objectId&limit=100`,
      `${app}/schemas/${m[2]}`,
      `${app}/classes/${m[2]}/count`,
      `${app}/schemas`,
    );
  }
  const early = {};
  for (const url of urls)
    early[url] = fetch(url, { credentials: 'same-origin', headers: { Accept: 'application/json' } });
  // Unused answers are not kept past the first seconds: later requests must see fresh data.
  window.__bdsEarly = early;
  setTimeout(() => {
    window.__bdsEarly = {};
  }, 10000);
})();
