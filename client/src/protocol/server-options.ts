/**
 * The answer of `GET /serverInfo/options` (master key only): the service's effective options
 * without their secrets, as the console's Server page shows them.
 */

/** One option (or one field of an object option). */
export interface OptionRow {
  /** The name as the config file takes it, dotted below an object option: `liveQuery.path`. */
  name: string;
  /** From the option schema's `.describe()`. */
  description: string;
  /** False for an optional option left out. */
  set: boolean;
  /** The effective value (absent when not set, hidden, or an object whose fields follow). */
  value?: unknown;
  /** A secret option: it is set, its value is never answered. */
  hidden?: true;
  /** An object option: its fields follow as rows of their own (`<name>.<field>`). */
  object?: true;
}

/** A sign-in provider the service accepts in `authData`. */
export interface AuthProviderRow {
  name: string;
  kind: 'anonymous' | 'idToken' | 'cloud';
  description: string;
}

/** The whole answer: the options by group, and the sign-in providers. */
export interface ServerOptionsView<Group extends string = string> {
  groups: Array<{ name: Group; title: string; options: OptionRow[] }>;
  authProviders: AuthProviderRow[];
}
