import assert from 'node:assert/strict';
import { test } from 'node:test';
import { defaultControllerConfig, parseControllerConfig } from '../../src/api/controller-config.js';

const HEAD = 'apiVersion: gateway.portico.io/v1alpha1\nkind: PorticoGateway\n';

test('defaults: default controller name, Kubernetes provider, controller namespace deploy, all namespaces', () => {
  const c = parseControllerConfig('c.yaml', HEAD);
  assert.deepEqual(c, defaultControllerConfig());
  assert.equal(c.gateway.controllerName, 'gateway.portico.io/gatewayclass-controller');
  assert.equal(c.provider.type, 'Kubernetes');
  assert.equal(c.provider.kubernetes.deploy.type, 'ControllerNamespace');
  assert.equal(c.provider.kubernetes.watch, undefined);
});

test('a full configuration parses', () => {
  const c = parseControllerConfig(
    'c.yaml',
    `${HEAD}gateway:\n  controllerName: gateway.portico.io/team-a-gatewayclass-controller\nprovider:\n  type: Kubernetes\n  kubernetes:\n    deploy: {type: GatewayNamespace}\n    watch: {type: Namespaces, namespaces: [team-a]}\n`,
  );
  assert.equal(c.provider.kubernetes.deploy.type, 'GatewayNamespace');
  assert.deepEqual(c.provider.kubernetes.watch?.namespaces, ['team-a']);
});

test('watch type Namespaces without namespaces names the field and line', () => {
  assert.throws(
    () =>
      parseControllerConfig(
        'c.yaml',
        `${HEAD}provider:\n  kubernetes:\n    watch:\n      type: Namespaces\n`,
      ),
    (e: Error) => {
      assert.equal(
        e.message,
        'c.yaml:6: PorticoGateway: provider.kubernetes.watch.namespaces: required when type is Namespaces',
      );
      return true;
    },
  );
});

test('bad enum values and YAML errors are reported with the line', () => {
  assert.throws(
    () => parseControllerConfig('c.yaml', `${HEAD}provider:\n  kubernetes:\n    deploy: {type: Elsewhere}\n`),
    /c\.yaml:5: PorticoGateway: provider\.kubernetes\.deploy\.type: must be one of ControllerNamespace, GatewayNamespace/,
  );
  assert.throws(
    () => parseControllerConfig('c.yaml', `${HEAD}gateway: [\n`),
    /^Error: c\.yaml:\d+: YAML: |c\.yaml:\d+: YAML: /,
  );
});

test('a misspelled configuration field is an error naming it', () => {
  assert.throws(
    () =>
      parseControllerConfig(
        'c.yaml',
        'apiVersion: gateway.portico.io/v1alpha1\nkind: PorticoGateway\ngateway:\n  controlerName: x/y\n',
      ),
    /c\.yaml:4: PorticoGateway: gateway\.controlerName: unknown field \(did you mean 'controllerName'\?\)/,
  );
});
