import { Link } from 'react-router';

export default function NotFoundRoute() {
  return (
    <main className="p-8">
      <h1 className="text-xl font-semibold">Page not found</h1>
      <p className="mt-2 text-sm">
        <Link className="text-indigo-600 underline dark:text-indigo-400" to="/">
          Back to the console
        </Link>
      </p>
    </main>
  );
}
