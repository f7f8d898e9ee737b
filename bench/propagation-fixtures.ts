// The resources every propagation benchmark starts from: one Gateway, one echo Service, and routes by hostname.

/** GatewayClass, Gateway `eg` (HTTP 8080), Service `echo` and its EndpointSlice at 127.0.0.1:`echoPort`. */
export function baseYaml(echoPort: number): string {
  return `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: portico}
spec: {controllerName: gateway.portico.io/gatewayclass-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: eg}
spec:
  gatewayClassName: portico
  listeners: [{name: http, protocol: HTTP, port: 8080}]
---
apiVersion: v1
kind: Service
metadata: {name: echo}
spec: {ports: [{name: http, port: 3000, protocol: TCP}]}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: echo-1, labels: {kubernetes.io/service-name: echo}}
addressType: IPv4
ports: [{name: http, port: ${echoPort}, protocol: TCP}]
endpoints: [{addresses: [127.0.0.1], conditions: {ready: true}}]
`;
}

/** HTTPRoute `name` for host `<name>.example.com`; `version` lands in a header, so a rewrite is a real change. */
export function routeYaml(name: string, version = 0): string {
  return `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: ${name}}
spec:
  parentRefs: [{name: eg}]
  hostnames: [${name}.example.com]
  rules:
    - matches: [{path: {type: PathPrefix, value: /}}]
      filters:
        - type: RequestHeaderModifier
          requestHeaderModifier: {set: [{name: x-version, value: "${version}"}]}
      backendRefs: [{name: echo, port: 3000}]
`;
}
