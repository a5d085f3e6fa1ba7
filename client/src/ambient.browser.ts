import { installScopeRunner, stackRunner } from './ambient.ts';

// No AsyncLocalStorage in browsers: scopes are tracked on a stack. Concurrent async scopes are
// not isolated from each other; a browser tab normally acts as one user anyway.
installScopeRunner(stackRunner());
