import { QueryClientProvider } from '@tanstack/react-query';
import { type ReactNode, useEffect, useState } from 'react';
import { Toaster } from '../components/ui/toaster.tsx';
import { onUnauthorized } from '../lib/api.ts';
import { createQueryClient } from '../lib/query-client.ts';
import { sessionKey } from '../lib/session.ts';
import { useSystemThemeSync } from '../lib/theme.ts';

export function AppProvider({ children }: { children: ReactNode }) {
  const [queryClient] = useState(createQueryClient);
  useSystemThemeSync();
  // Any 401 means the session ended (logout elsewhere, idle timeout): back to the login page.
  useEffect(() => onUnauthorized(() => queryClient.setQueryData(sessionKey, null)), [queryClient]);
  return (
    <QueryClientProvider client={queryClient}>
      {children}
      <Toaster />
    </QueryClientProvider>
  );
}
