import { isRouteErrorResponse, useRouteError } from 'react-router';
import { Button } from '../../components/ui/button.tsx';

/** A route's render or chunk-load failure: the message and a reload button, never a blank page. */
export function RouteError() {
  const err = useRouteError();
  const text = isRouteErrorResponse(err)
    ? `${err.status} ${err.statusText}`
    : err instanceof Error
      ? err.message
      : String(err);
  return (
    <div role="alert" className="p-8">
      <h1 className="text-lg font-semibold text-red-700 dark:text-red-400">Something went wrong</h1>
      <p className="mt-2 font-mono text-sm">{text}</p>
      <Button className="mt-4" onClick={() => window.location.reload()}>
        Reload
      </Button>
    </div>
  );
}
