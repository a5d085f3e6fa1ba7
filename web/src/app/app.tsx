import { Suspense, useState } from 'react';
import { RouterProvider } from 'react-router';
import { Spinner } from '../components/ui/spinner.tsx';
import { AppProvider } from './provider.tsx';
import { createRouter } from './router.tsx';

export function App() {
  const [router] = useState(createRouter);
  return (
    <AppProvider>
      <Suspense fallback={<Spinner />}>
        <RouterProvider router={router} />
      </Suspense>
    </AppProvider>
  );
}
