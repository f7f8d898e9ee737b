// Golden file format: a header of `# key: json` comments in the input; output as YAML with keys redacted.
import { stringify } from 'yaml';
import type { DataPlaneState, TranslateOptions, TranslateResult } from '../../src/translate/index.js';
import { bundleLabel, certificateLabel } from './testdata-certificates.js';

export interface GoldenHeader {
  options: TranslateOptions;
  dataPlane?: DataPlaneState;
  expectLoadErrors: string[];
}

export function readHeader(text: string): GoldenHeader {
  const header: GoldenHeader = {
    options: {
      controllerName: 'gateway.portico.io/gatewayclass-controller',
      controllerNamespace: 'portico-gateway-system',
      deployType: 'ControllerNamespace',
    },
    expectLoadErrors: [],
  };
  for (const line of text.split('\n')) {
    const m = /^# (options|data-plane|load-error): (.*)$/.exec(line);
    if (m === null) continue;
    if (m[1] === 'options')
      header.options = { ...header.options, ...(JSON.parse(m[2]!) as Partial<TranslateOptions>) };
    else if (m[1] === 'data-plane') header.dataPlane = JSON.parse(m[2]!) as DataPlaneState;
    else header.expectLoadErrors.push(m[2]!);
  }
  return header;
}

export function goldenText(result: TranslateResult): string {
  // A fleet without Portico policies shows no `policies: []` (the goldens from before them stay as they were).
  const fleets = result.fleets.map(({ policies, ...f }) => ({
    ...f,
    ...(policies.length === 0 ? {} : { policies }),
    // Test certificates are made per run: shown by name. Keys are never shown.
    secrets: f.secrets.map((s) => ({
      ...s,
      certificatePem: certificateLabel(s.certificatePem) ?? s.certificatePem,
      privateKeyPem: '<redacted>',
    })),
    clusters: f.clusters.map((c) =>
      c.tls?.caPem === undefined ? c : { ...c, tls: { ...c.tls, caPem: bundleLabel(c.tls.caPem) } },
    ),
    listeners: f.listeners.map((l) =>
      l.tls?.clientValidation === undefined
        ? l
        : {
            ...l,
            tls: {
              ...l.tls,
              clientValidation: {
                ...l.tls.clientValidation,
                caPem: bundleLabel(l.tls.clientValidation.caPem),
              },
            },
          },
    ),
  }));
  return stringify(
    { statuses: result.statuses, fleets, infra: result.infra },
    { lineWidth: 0, aliasDuplicateObjects: false },
  );
}
