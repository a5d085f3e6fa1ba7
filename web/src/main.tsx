import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { App } from './app/app.tsx';
import './index.css';

// The data browser opened by URL: its route chunk loads now, beside the session check, instead of
// after it (the route's lazy import resolves to this same chunk). Its first requests are already
// on their way (public/early-requests.js).
if (/^\/apps\/[^/]+\/data/.test(location.pathname))
  void import('./features/data-browser/data-browser-route.tsx');

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
