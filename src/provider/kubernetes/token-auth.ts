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
      const status = (reply.body.status ?? {}) as JsonObject;
      const user = (status.user ?? {}) as {
        username?: string;
        groups?: string[];
        extra?: Record<string, string[]>;
      };
      const audiences = (status.audiences ?? []) as string[];
      if (status.authenticated !== true) throw new PorticoError('E_AUTH', 'token not authenticated');
      if (!audiences.includes(audience)) {
        throw new PorticoError('E_AUTH', `token audience is not ${audience}`);
      }
      if (!(user.groups ?? []).includes('system:serviceaccounts')) {
        throw new PorticoError('E_AUTH', 'token is not a service account token');
      }
      const identity: Identity = {
        username: user.username ?? '',
        groups: user.groups ?? [],
        extra: user.extra ?? {},
      };
      const expiresAt = tokenExpiry(token);
      if (expiresAt !== undefined) identity.expiresAt = expiresAt;
      return identity;
    },
    authorize(identity, request) {
      const account = options.fleetAccount(request.fleet);
      if (account === undefined) return false;
      if (identity.username !== `system:serviceaccount:${account.namespace}:${account.name}`) return false;
      const pods = identity.extra[POD_NAME_EXTRA] ?? [];
      return pods.length === 1 && pods[0] === request.node;
    },
  };
}
