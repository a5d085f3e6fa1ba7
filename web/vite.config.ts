import tailwindcss from '@tailwindcss/vite';
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

/** The bff (console backend) the dev server proxies /bff/ to. */
const BFF_URL = process.env.BDS_CONSOLE_URL ?? 'http://127.0.0.1:4040';

export default defineConfig({
  plugins: [react(), tailwindcss()],
  server: {
    port: 5173,
    proxy: {
      // Same origin for the browser: cookies and the CSRF Origin check work as in production.
      '/bff': { target: BFF_URL, changeOrigin: false },
    },
  },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    // dist/.vite/manifest.json: the bundle-budget check walks the entry's static imports from it.
    manifest: true,
    // No inline <script> or module-preload polyfill tricks: the bff's CSP is script-src 'self'.
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    sourcemap: false,
    target: 'es2022',
  },
});
