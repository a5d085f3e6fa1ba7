/**
 * The Security section's calls to the bff: the service's explain / evaluate / rules / impact endpoints
 * (docs/security-api.md), the class-level permissions save, and the user and role look-ups the
 * editors pick principals from. Shared by the Security tabs and the data browser's "View as"/"Why?".
 */
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, seg } from './api.ts';

const app = (appId: string) => `/apps/${seg(appId)}`;

// ---- Contract types (docs/security-api.md) ----

export type Viewpoint =
  | { kind: 'user'; userId: string }
  | { kind: 'anonymous' }
  | { kind: 'roles'; roles: string[] };

export type Operation = 'find' | 'get' | 'count' | 'create' | 'update' | 'delete' | 'addField';

export interface ExplainRequest {
  operation: Operation;
  className: string;
  objectId?: string;
  body?: Record<string, unknown>;
  viewpoint: Viewpoint;
}

export interface ProtectedGroup {
  pattern: string;
  fields: string[];
}

export interface ExplainLayer {
  layer: 'clp' | 'acl' | 'protectedFields';
  allowed?: boolean;
  rule?: string;
  entry?: string;
  roleChain?: string[];
  reason: string;
  skipped?: boolean;
  /** protectedFields layer: the fields hidden from this viewpoint (the intersection of `groups`). */
  hidden?: string[];
  groups?: ProtectedGroup[];
}

export interface Explanation {
  allowed: boolean;
  decidedBy: 'clp' | 'acl' | 'protectedFields' | 'master' | 'system';
  code?: number;
  message?: string;
  viewpoint: {
    kind: Viewpoint['kind'];
    userId?: string;
    username?: string;
    roles: Array<{ name: string; chain: string[] }>;
  };
  layers: ExplainLayer[];
  toAllow: string[];
}

export interface EvaluateRequest {
  viewpoint: Viewpoint;
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: string;
  query?: Record<string, unknown>;
  body?: Record<string, unknown>;
}

export interface Evaluation {
  status: number;
  body: unknown;
  dryRun: boolean;
  ms?: number;
  wouldHave?: { op: string; className: string; after?: Record<string, unknown> };
}

/** One change of a class in a draft for POST /security/impact. */
export type PermissionChange =
  | { kind: 'acl'; objectIds: string[]; ACL: Record<string, { read?: boolean; write?: boolean }> }
  | { kind: 'clp'; classLevelPermissions: Record<string, unknown> }
  | { kind: 'protectedFields'; protectedFields: Record<string, string[]> };

/** A role's membership (`users`) or inheritance (`roles`: the roles in its `roles` relation) change. */
export interface RoleChange {
  roleId: string;
  users?: { add?: string[]; remove?: string[] };
  roles?: { add?: string[]; remove?: string[] };
}

/**
 * A permission draft (docs/security-api.md): changes of one class, in order, and role changes.
 * Without a className, a draft of role changes is compared on every class.
 */
export interface ImpactDraft {
  className?: string;
  changes?: PermissionChange[];
  roles?: RoleChange[];
}

export interface UserSample {
  objectId: string;
  username?: string;
}

export interface AccessShift {
  gain: number;
  lose: number;
  gainSample: UserSample[];
  loseSample: UserSample[];
}

/** What anonymous callers gain or lose. */
export type Shift = 'gains' | 'loses' | 'both' | 'same';

export interface OperationShift extends AccessShift {
  operation: Operation;
  anonymous: Shift;
}

export interface FieldShift {
  field: string;
  visibleTo: number;
  hiddenFrom: number;
  hiddenFromSample?: UserSample[];
  visibleToSample?: UserSample[];
  anonymous?: Shift;
}

export interface ClassShift {
  anonymous: { read: Shift; write: Shift };
  read: AccessShift;
  write: AccessShift;
  /** Per operation (absent from a service that answers read and write only). */
  operations?: OperationShift[];
  fields: FieldShift[];
}

export interface Impact extends ClassShift {
  users: { total: number; considered: number; sampled: boolean; bound: number | null };
  /** Every class compared (the one named, or each class a role draft changes something on). */
  classes?: Array<ClassShift & { className: string }>;
}

/** The class layer's rule for one operation (POST /security/rules). */
export interface ProbeVerdict {
  allowed: boolean;
  decidedBy: string;
  rule: string;
  reason: string;
  code?: number;
  message?: string;
  onSomeRows?: boolean;
}
export interface OperationRule {
  operation: Operation;
  /** No class-level permission changes the outcome: a built-in rule decides it. */
  fixed: boolean;
  builtIn?: { rule: string; reason: string };
  anonymous: ProbeVerdict;
  signedIn: ProbeVerdict;
}

export const securityApi = {
  explain: (appId: string, req: ExplainRequest) =>
    api.post<Explanation>(`${app(appId)}/security/explain`, req),
  evaluate: (appId: string, req: EvaluateRequest) =>
    api.post<Evaluation>(`${app(appId)}/security/evaluate`, req),
  impact: (appId: string, draft: ImpactDraft) => api.post<Impact>(`${app(appId)}/security/impact`, draft),
  rules: (appId: string, className: string, signal?: AbortSignal) =>
    api.get<{ className: string; operations: OperationRule[] }>(
      `${app(appId)}/security/rules/${encodeURIComponent(className)}`,
      undefined,
      signal,
    ),
  /** Replaces the class's classLevelPermissions (protectedFields included) through the bff. */
  saveClp: (appId: string, className: string, classLevelPermissions: Record<string, unknown>) =>
    api.put<{ classLevelPermissions: Record<string, unknown> }>(
      `${app(appId)}/schemas/${encodeURIComponent(className)}/clp`,
      { classLevelPermissions },
    ),
};

export const securityKeys = {
  impact: (appId: string, draft: ImpactDraft) => ['apps', appId, 'security', 'impact', draft] as const,
  rules: (appId: string, className: string) => ['apps', appId, 'security', 'rules', className] as const,
  explain: (appId: string, req: ExplainRequest | null) =>
    ['apps', appId, 'security', 'explain', req] as const,
  evaluate: (appId: string, req: EvaluateRequest | null) =>
    ['apps', appId, 'security', 'evaluate', req] as const,
  roles: (appId: string) => ['apps', appId, 'security', 'role-names'] as const,
  schemas: (appId: string) => ['apps', appId, 'security', 'schemas'] as const,
};

/** The impact of a permission draft; recomputed whenever the draft differs. */
export function useImpact(appId: string, draft: ImpactDraft) {
  return useQuery({
    queryKey: securityKeys.impact(appId, draft),
    queryFn: () => securityApi.impact(appId, draft),
    retry: false,
    staleTime: 0,
  });
}

/** The rules the service enforces on a class, per operation (built-in classes' fixed rules). */
export function useClassRules(appId: string, className: string) {
  return useQuery({
    queryKey: securityKeys.rules(appId, className),
    queryFn: ({ signal }) => securityApi.rules(appId, className, signal),
    staleTime: 30_000,
  });
}

/** The explanation for one request and viewpoint (null: nothing asked yet). */
export function useExplain(appId: string, req: ExplainRequest | null) {
  return useQuery({
    queryKey: securityKeys.explain(appId, req),
    queryFn: () => securityApi.explain(appId, req as ExplainRequest),
    enabled: req !== null,
    retry: false,
  });
}

/** One request run with a viewpoint's permissions (null: nothing asked yet). */
export function useEvaluate(appId: string, req: EvaluateRequest | null) {
  return useQuery({
    queryKey: securityKeys.evaluate(appId, req),
    queryFn: () => securityApi.evaluate(appId, req as EvaluateRequest),
    enabled: req !== null,
    retry: false,
  });
}

/** The names of the app's roles (for role principals and `role:X` patterns). */
export function useRoleNames(appId: string) {
  return useQuery({
    queryKey: securityKeys.roles(appId),
    queryFn: ({ signal }) =>
      api
        .get<{ results: Array<{ name: string }> }>(
          `${app(appId)}/roles`,
          { keys: 'name', limit: 1000 },
          signal,
        )
        .then((r) => r.results.map((x) => x.name)),
    staleTime: 30_000,
  });
}

/** Saves a class's CLP; refreshes the schemas the console holds. */
export function useSaveClp(appId: string, className: string) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (clp: Record<string, unknown>) => securityApi.saveClp(appId, className, clp),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: ['apps', appId, 'security'] });
      void queryClient.invalidateQueries({ queryKey: ['data-browser', appId] });
    },
  });
}

/** Usernames of the given user ids (ids that match no user are left out). */
export function useUserNames(appId: string, ids: readonly string[]) {
  const sorted = [...new Set(ids)].sort();
  return useQuery({
    queryKey: ['apps', appId, 'security', 'user-names', sorted] as const,
    enabled: sorted.length > 0,
    queryFn: ({ signal }) =>
      api
        .get<{ results: Array<{ objectId: string; username?: string }> }>(
          `${app(appId)}/users`,
          { where: JSON.stringify({ objectId: { $in: sorted } }), limit: sorted.length, keys: 'username' },
          signal,
        )
        .then((r) => Object.fromEntries(r.results.map((u) => [u.objectId, u.username ?? u.objectId]))),
    staleTime: 30_000,
  });
}

/** The REST path of a class's rows for POST /security/evaluate (built-in classes have their own). */
export function rowsPath(className: string): string {
  const builtIn: Record<string, string> = {
    _User: '/users',
    _Role: '/roles',
    _Installation: '/installations',
    _Session: '/sessions',
  };
  return builtIn[className] ?? `/classes/${encodeURIComponent(className)}`;
}
