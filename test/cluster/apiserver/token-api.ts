// TokenRequest (serviceaccounts/token) and TokenReview: issuing and checking service account tokens.
import { API_AUDIENCE, type Authenticator } from './authn.js';
import type { Lifecycle } from './lifecycle.js';
import { arrayAt, isJsonObject, type JsonObject, numberAt, objectAt, stringAt } from './object.js';
import { builtinType } from './resources.js';
import { ApiError, badRequest, invalid } from './status.js';
import { ISSUER, type TokenClaims, type TokenSigner } from './tokens.js';

export interface TokenParams {
  namespace: string;
  serviceAccount: string;
  audiences?: string[];
  expirationSeconds?: number;
  pod?: string;
  /** Issue time; tests pass a past time to get an expired token. */
  nowSeconds?: number;
}

const SA = builtinType('serviceaccounts');
const POD = builtinType('pods');

export function issueToken(
  lifecycle: Lifecycle,
  signer: TokenSigner,
  p: TokenParams,
): { token: string; exp: number } {
  const sa = lifecycle.get(SA, p.namespace, p.serviceAccount);
  const iat = p.nowSeconds ?? Math.floor(Date.now() / 1000);
  const exp = iat + (p.expirationSeconds ?? 3600);
  const claims: TokenClaims = {
    iss: ISSUER,
    sub: `system:serviceaccount:${p.namespace}:${p.serviceAccount}`,
    aud: p.audiences !== undefined && p.audiences.length > 0 ? p.audiences : [API_AUDIENCE],
    iat,
    nbf: iat,
    exp,
    'kubernetes.io': {
      namespace: p.namespace,
      serviceaccount: { name: p.serviceAccount, uid: sa.metadata.uid ?? '' },
    },
  };
  if (p.pod !== undefined) {
    const pod = lifecycle.get(POD, p.namespace, p.pod);
    claims['kubernetes.io'].pod = { name: p.pod, uid: pod.metadata.uid ?? '' };
  }
  return { token: signer.sign(claims), exp };
}

export function tokenRequest(
  lifecycle: Lifecycle,
  signer: TokenSigner,
  namespace: string,
  serviceAccount: string,
  body: unknown,
  minExpirationSeconds: number,
): JsonObject {
  if (!isJsonObject(body)) throw badRequest('the body is not a TokenRequest');
  const spec = objectAt(body, 'spec') ?? {};
  const expirationSeconds = numberAt(spec, 'expirationSeconds') ?? 3600;
  const target = {
    group: 'authentication.k8s.io',
    resource: 'tokenrequests',
    kind: 'TokenRequest',
    name: serviceAccount,
  };
  if (expirationSeconds < minExpirationSeconds) {
    throw invalid(target, [
      `spec.expirationSeconds: Invalid value: ${expirationSeconds}: may not specify a duration less than ${minExpirationSeconds} seconds`,
    ]);
  }
  const bound = objectAt(spec, 'boundObjectRef');
  const params: TokenParams = {
    namespace,
    serviceAccount,
    audiences: arrayAt(spec, 'audiences').filter((a): a is string => typeof a === 'string'),
    expirationSeconds,
  };
  if (bound !== undefined) {
    if (stringAt(bound, 'kind') !== 'Pod')
      throw invalid(target, ['spec.boundObjectRef.kind: only Pod is supported']);
    const podName = stringAt(bound, 'name') ?? '';
    const pod = lifecycle.get(POD, namespace, podName);
    const uid = stringAt(bound, 'uid');
    if (uid !== undefined && uid !== pod.metadata.uid) {
      throw new ApiError(
        409,
        'Conflict',
        `the UID in the bound object reference (${uid}) does not match the UID in record`,
      );
    }
    params.pod = podName;
  }
  const { token, exp } = issueToken(lifecycle, signer, params);
  return {
    kind: 'TokenRequest',
    apiVersion: 'authentication.k8s.io/v1',
    metadata: { name: serviceAccount, namespace, creationTimestamp: null },
    spec: {
      ...spec,
      audiences: params.audiences?.length ? params.audiences : [API_AUDIENCE],
      expirationSeconds,
    },
    status: { token, expirationTimestamp: new Date(exp * 1000).toISOString().replace(/\.\d+Z$/, 'Z') },
  };
}

export function tokenReview(authenticator: Authenticator, body: unknown): JsonObject {
  const spec = objectAt(body, 'spec') ?? {};
  const token = stringAt(spec, 'token') ?? '';
  const wanted = arrayAt(spec, 'audiences').filter((a): a is string => typeof a === 'string');
  const audiences = wanted.length > 0 ? wanted : [API_AUDIENCE];
  const result = authenticator.authenticate(token, audiences);
  const status: JsonObject = result.ok
    ? { authenticated: true, user: { ...result.user }, audiences: result.audiences }
    : { user: {}, error: result.error };
  return {
    kind: 'TokenReview',
    apiVersion: 'authentication.k8s.io/v1',
    metadata: { creationTimestamp: null },
    spec: { ...spec, token: undefined },
    status,
  };
}
