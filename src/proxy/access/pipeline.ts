// One check pipeline per policy: steps in order (authentication mechanisms, then the access rules), the first
// refusal answers. A step sees the request (request-view.ts) and what earlier steps learned (verified claims), and
// either lets the request on, with headers to set or remove on the upstream request, or refuses it with a response.
// A step may be asynchronous (a key set to fetch, a service to ask); a pipeline of synchronous steps stays so.
import type { AccessPolicyConfig, HeaderModifier, HeaderValue } from '../../ir/fleet-config.js';
import { apiKeysStep, basicAuthStep } from './credentials.js';
import { externalAuthStep, oidcStep } from './external-steps.js';
import { jwtStep } from './jwt.js';
import { OidcAuthenticator } from './oidc.js';
import type { AccessRequest } from './request-view.js';
import { accessRulesStep } from './rules.js';
import type { AccessContext, AccessStep, AuthorizationReach, StepOutcome } from './step.js';

export interface CompiledAccessPolicy {
  name: string;
  steps: readonly AccessStep[];
  /** Query parameters that carry a credential (a token, a key): the access log shows their values as REDACTED. */
  credentialQuery: readonly string[];
}

/** A policy that cannot be honoured refuses everything: fail closed. */
function refusingStep(reason: string): AccessStep {
  const outcome: StepOutcome = { allow: false, status: 403, rule: 'invalid-policy', reason };
  return { check: () => outcome };
}

/** The pipeline of one policy; mechanisms are added here, in the order they run. */
export function compileAccessPolicy(config: AccessPolicyConfig): CompiledAccessPolicy {
  const credentialQuery = [
    ...(config.jwt?.sources ?? []).filter((t) => t.type === 'QueryParameter').map((t) => t.name),
    ...(config.apiKeys?.source.type === 'QueryParameter' ? [config.apiKeys.source.name] : []),
  ];
  if (config.refused !== undefined)
    return { name: config.name, steps: [refusingStep(config.refused)], credentialQuery };
  const steps: AccessStep[] = [];
  if (config.jwt !== undefined) steps.push(jwtStep(config.jwt));
  if (config.basicAuth !== undefined) steps.push(basicAuthStep(config.basicAuth.users));
  if (config.apiKeys !== undefined) steps.push(apiKeysStep(config.apiKeys));
  if (config.oidc !== undefined) steps.push(oidcStep(new OidcAuthenticator(config.oidc)));
  // An authorization service is asked after the credentials are checked, before the access rules decide.
  if (config.externalAuth !== undefined) steps.push(externalAuthStep(config.externalAuth));
  steps.push(accessRulesStep(config.rules, config.defaultAction));
  return { name: config.name, steps, credentialQuery };
}

/** A policy's verdict: allowed with the upstream header changes gathered, or refused. */
export type AccessVerdict =
  | {
      allow: true;
      policy: string;
      rule: string;
      set: HeaderValue[];
      add: HeaderValue[];
      remove: string[];
      removeQuery: string[];
      responseHeaders: string[];
    }
  | {
      allow: false;
      policy: string;
      rule: string;
      status: number;
      headers?: string[];
      reason: string;
      body?: Buffer;
    };

function isPromise<T>(v: T | Promise<T>): v is Promise<T> {
  return typeof (v as { then?: unknown }).then === 'function';
}

/** Runs the steps in order; synchronous while every step is. A step that throws refuses (fail closed). */
export function runPolicy(
  policy: CompiledAccessPolicy,
  req: AccessRequest,
  reach?: AuthorizationReach,
): AccessVerdict | Promise<AccessVerdict> {
  const context: AccessContext = reach === undefined ? {} : { reach };
  const set: HeaderValue[] = [];
  const add: HeaderValue[] = [];
  const remove: string[] = [];
  const responseHeaders: string[] = [];
  const removeQuery: string[] = [];
  let rule = 'default';
  const from = (i: number): AccessVerdict | Promise<AccessVerdict> => {
    for (; i < policy.steps.length; i++) {
      let outcome: StepOutcome | Promise<StepOutcome>;
      try {
        outcome = policy.steps[i]!.check(req, context);
      } catch (error) {
        outcome = failed(error);
      }
      if (isPromise(outcome)) {
        const next = i + 1;
        return outcome.catch(failed).then((o) => take(o) ?? from(next));
      }
      const done = take(outcome);
      if (done !== undefined) return done;
    }
    return { allow: true, policy: policy.name, rule, set, add, remove, removeQuery, responseHeaders };
  };
  const take = (o: StepOutcome): AccessVerdict | undefined => {
    if (!o.allow)
      return {
        allow: false,
        policy: policy.name,
        rule: o.rule,
        status: o.status,
        reason: o.reason,
        ...(o.headers === undefined ? {} : { headers: o.headers }),
        ...(o.body === undefined ? {} : { body: o.body }),
      };
    if (o.rule !== undefined) rule = o.rule;
    if (o.set !== undefined) set.push(...o.set);
    if (o.add !== undefined) add.push(...o.add);
    if (o.remove !== undefined) remove.push(...o.remove);
    if (o.responseHeaders !== undefined) responseHeaders.push(...o.responseHeaders);
    if (o.removeQuery !== undefined) removeQuery.push(...o.removeQuery);
    return undefined;
  };
  return from(0);
}

function failed(error: unknown): StepOutcome {
  const message = error instanceof Error ? error.message : String(error);
  return { allow: false, status: 403, rule: 'error', reason: `check failed: ${message}` };
}

/** Several policies (one per kind at most today), all must allow: the first refusal answers. */
export function runPolicies(
  policies: readonly CompiledAccessPolicy[],
  req: AccessRequest,
  reach?: AuthorizationReach,
): AccessVerdict[] | Promise<AccessVerdict[]> {
  const verdicts: AccessVerdict[] = [];
  const from = (i: number): AccessVerdict[] | Promise<AccessVerdict[]> => {
    for (; i < policies.length; i++) {
      const v = runPolicy(policies[i]!, req, reach);
      if (isPromise(v)) {
        const next = i + 1;
        return v.then((done) => {
          verdicts.push(done);
          return done.allow ? from(next) : verdicts;
        });
      }
      verdicts.push(v);
      if (!v.allow) return verdicts;
    }
    return verdicts;
  };
  return from(0);
}

/** What the policies' verdicts come to: the refusal that answers, or the upstream header changes. */
export type Settled =
  | { allow: false; refusal: AccessVerdict & { allow: false } }
  | { allow: true; upstream: HeaderModifier | undefined; removeQuery: string[]; responseHeaders: string[] };

/** Every verdict counted; the first refusal, else the allowances' header changes together. */
export function settle(
  verdicts: readonly AccessVerdict[],
  count: (policy: string, rule: string, outcome: 'allowed' | 'denied') => void,
): Settled {
  const set: HeaderValue[] = [];
  const add: HeaderValue[] = [];
  const remove: string[] = [];
  const responseHeaders: string[] = [];
  const removeQuery: string[] = [];
  for (const v of verdicts) {
    count(v.policy, v.rule, v.allow ? 'allowed' : 'denied');
    if (!v.allow) return { allow: false, refusal: v };
    set.push(...v.set);
    add.push(...v.add);
    remove.push(...v.remove);
    responseHeaders.push(...v.responseHeaders);
    removeQuery.push(...v.removeQuery);
  }
  const edits = set.length + add.length + remove.length;
  return {
    allow: true,
    upstream: edits === 0 ? undefined : { set, add, remove },
    removeQuery,
    responseHeaders,
  };
}

/** `target` (path and query) without the query parameters `names`; the rest of the query as it came. */
export function withoutQueryParameters(target: string, names: readonly string[]): string {
  const q = target.indexOf('?');
  if (q < 0 || names.length === 0) return target;
  const kept = target
    .slice(q + 1)
    .split('&')
    .filter((pair) => {
      const eq = pair.indexOf('=');
      const raw = eq < 0 ? pair : pair.slice(0, eq);
      let name = raw;
      try {
        name = decodeURIComponent(raw.replace(/\+/g, ' '));
      } catch {
        // A malformed escape is compared as it came.
      }
      return !names.includes(name);
    });
  return kept.length === 0 ? target.slice(0, q) : `${target.slice(0, q)}?${kept.join('&')}`;
}

/** A verdict for a pipeline that failed outside its steps (a bug): refused, fail closed. */
export const CHECK_FAILED: AccessVerdict = {
  allow: false,
  policy: '-',
  rule: 'error',
  status: 403,
  reason: 'check failed',
};

/** Runs the policies and hands `done` what they come to, now when every step was synchronous, else later. */
export function checkAccess(
  policies: readonly CompiledAccessPolicy[],
  req: AccessRequest,
  count: (policy: string, rule: string, outcome: 'allowed' | 'denied') => void,
  done: (settled: Settled) => void,
  reach?: AuthorizationReach,
): void {
  const verdicts = runPolicies(policies, req, reach);
  if (!(verdicts instanceof Promise)) {
    done(settle(verdicts, count));
    return;
  }
  verdicts.then(
    (v) => done(settle(v, count)),
    () => done(settle([CHECK_FAILED], count)),
  );
}

/** The credential-carrying query parameters of the policies a request must pass; undefined when none. */
export function credentialQueryOf(
  policies: readonly CompiledAccessPolicy[],
): ReadonlySet<string> | undefined {
  const names = policies.flatMap((p) => p.credentialQuery);
  return names.length === 0 ? undefined : new Set(names);
}

/** The most request body bytes any step of `policies` reads (0: none; the pipeline then never waits for a body). */
export function bodyBytesOf(policies: readonly CompiledAccessPolicy[]): number {
  let most = 0;
  for (const policy of policies) for (const step of policy.steps) most = Math.max(most, step.bodyBytes ?? 0);
  return most;
}
