// Gateway Namespace Mode discovery auth: TokenReview authenticates a proxy's projected token (audience,
// group system:serviceaccounts); authorization binds it to exactly its own fleet and its own pod.
import type { DiscoveryAuth, Identity } from '../../discovery/server.js';
import { PorticoError } from '../../platform/errors.js';
import type { ApiClient, JsonObject } from './api-client.js';

export const POD_NAME_EXTRA = 'authentication.kubernetes.io/pod-name';

export function discoveryAudience(controllerNamespace: string): string {
  return `portico-gateway.${controllerNamespace}.svc.cluster.local`;
}

/** The `exp` claim in ms; the TokenReview already vouched for the token, this only reads its expiry. */
export function tokenExpiry(token: string): number | undefined {
  const payload = token.split('.')[1];
  if (payload === undefined) return undefined;
  try {
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { exp?: unknown };
    return typeof claims.exp === 'number' ? claims.exp * 1000 : undefined;
  } catch {
    return undefined;
  }
}

/** A list of strings as JSON gives it, or undefined for anything else (a string is not a list of one). */
function strings(value: unknown): string[] | undefined {
  return Array.isArray(value) && value.every((v) => typeof v === 'string') ? value : undefined;
}

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The one pod a token is bound to (the pod-name extra holds exactly one name), or undefined. */
export function boundPod(extra: Record<string, string[]>): string | undefined {
  const pods = Object.hasOwn(extra, POD_NAME_EXTRA) ? extra[POD_NAME_EXTRA] : undefined;
  return pods?.length === 1 && pods[0] !== '' ? pods[0] : undefined;
}

/**
 * The identity a TokenReview status vouches for, read strictly: every field of the shape the API defines, the
 * audience ours, a service account, bound to one pod. Anything else is refused, never read loosely.
 */
function reviewedIdentity(status: unknown, audience: string): Identity {
  const refuse = (why: string): never => {
    throw new PorticoError('E_AUTH', why);
  };
  if (!isObject(status) || status.authenticated !== true) return refuse('token not authenticated');
  if (!strings(status.audiences)?.includes(audience)) return refuse(`token audience is not ${audience}`);
  const user = isObject(status.user) ? status.user : {};
  const groups = strings(user.groups);
  if (typeof user.username !== 'string' || user.username === '' || groups === undefined)
    return refuse('token review names no user');
  if (!groups.includes('system:serviceaccounts')) return refuse('token is not a service account token');
  // A map of string lists, without a prototype: an extra's name is a key like any other.
  const extra = Object.create(null) as Record<string, string[]>;
  if (user.extra !== undefined) {
    if (!isObject(user.extra)) return refuse('token review extra is not a map');
    for (const [key, value] of Object.entries(user.extra)) {
      const list = strings(value);
      if (list === undefined) return refuse(`token review extra ${key} is not a list of strings`);
      extra[key] = list;
    }
  }
  // A token a pod's kubelet did not ask for (`kubectl create token`) names no pod: it speaks for no proxy.
  if (boundPod(extra) === undefined)
    return refuse(`token is not bound to exactly one pod (${POD_NAME_EXTRA})`);
  return { username: user.username, groups, extra };
}

export interface TokenAuthOptions {
  client: ApiClient;
  controllerNamespace: string;
  /** Fleet key → where its ServiceAccount is (undefined: a fleet this controller does not serve). */
  fleetAccount(fleet: string): { namespace: string; name: string } | undefined;
}

export function tokenAuth(options: TokenAuthOptions): DiscoveryAuth {
  const audience = discoveryAudience(options.controllerNamespace);
  return {
    mode: 'token',
    async authenticate(token: string): Promise<Identity> {
      const reply = await options.client.request('POST', '/apis/authentication.k8s.io/v1/tokenreviews', {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenReview',
        spec: { token, audiences: [audience] },
      });
      if (reply.status !== 201 && reply.status !== 200) {
        throw new PorticoError('E_KUBERNETES', `token review failed: HTTP ${reply.status}`);
      }
      const identity = reviewedIdentity(reply.body.status, audience);
      const expiresAt = tokenExpiry(token);
      if (expiresAt !== undefined) identity.expiresAt = expiresAt;
      return identity;
    },
    authorize(identity, request) {
      const account = options.fleetAccount(request.fleet);
      if (account === undefined) return false;
      if (identity.username !== `system:serviceaccount:${account.namespace}:${account.name}`) return false;
      const pod = boundPod(identity.extra);
      return pod !== undefined && pod === request.node;
    },
  };
}
