// Bearer-token authentication: the admin token, or a service account JWT checked against live objects.
import type { Store } from './store.js';
import { ISSUER, type TokenSigner } from './tokens.js';

export const API_AUDIENCE = ISSUER;

export interface UserInfo {
  username: string;
  uid: string;
  groups: string[];
  extra: Record<string, string[]>;
}

export type AuthResult = { ok: true; user: UserInfo; audiences: string[] } | { ok: false; error: string };

export interface Authenticator {
  authenticate(token: string, audiences: string[], nowSeconds?: number): AuthResult;
}

export const ADMIN_USER: UserInfo = {
  username: 'kubernetes-admin',
  uid: '',
  groups: ['system:masters', 'system:authenticated'],
  extra: {},
};

export function createAuthenticator(adminToken: string, signer: TokenSigner, store: Store): Authenticator {
  return {
    authenticate(token, audiences, nowSeconds = Math.floor(Date.now() / 1000)) {
      if (token === adminToken) return { ok: true, user: ADMIN_USER, audiences };
      const claims = signer.decode(token);
      if (typeof claims === 'string') return { ok: false, error: `invalid bearer token, ${claims}` };
      if (claims.iss !== ISSUER) return { ok: false, error: 'invalid bearer token, unknown issuer' };
      if (claims.exp <= nowSeconds) return { ok: false, error: 'invalid bearer token, token has expired' };
      if (claims.nbf > nowSeconds + 60)
        return { ok: false, error: 'invalid bearer token, token not yet valid' };
      const matched = audiences.filter((a) => claims.aud.includes(a));
      if (matched.length === 0) {
        return {
          ok: false,
          error: 'invalid bearer token, token audiences do not match the requested audiences',
        };
      }
      const k = claims['kubernetes.io'];
      const sa = store.get('/serviceaccounts', k.namespace, k.serviceaccount.name);
      if (sa === undefined || sa.metadata.uid !== k.serviceaccount.uid || sa.metadata.deletionTimestamp) {
        return { ok: false, error: 'invalid bearer token, service account has been deleted or recreated' };
      }
      const extra: Record<string, string[]> = {};
      if (k.pod !== undefined) {
        const pod = store.get('/pods', k.namespace, k.pod.name);
        if (pod === undefined || pod.metadata.uid !== k.pod.uid) {
          return { ok: false, error: 'invalid bearer token, the pod the token is bound to no longer exists' };
        }
        extra['authentication.kubernetes.io/pod-name'] = [k.pod.name];
        extra['authentication.kubernetes.io/pod-uid'] = [k.pod.uid];
      }
      const user: UserInfo = {
        username: `system:serviceaccount:${k.namespace}:${k.serviceaccount.name}`,
        uid: k.serviceaccount.uid,
        groups: ['system:serviceaccounts', `system:serviceaccounts:${k.namespace}`, 'system:authenticated'],
        extra,
      };
      return { ok: true, user, audiences: matched };
    },
  };
}
