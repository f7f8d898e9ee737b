// DataPlaneProxy spec.kubernetes: the shape of a fleet's workload, in Kubernetes' own field names and shapes
// (apps/v1, autoscaling/v2, policy/v1, core/v1), so a user pastes what they already know. Fields Portico only
// passes through (affinity's terms, an HPA's non-resource metrics, env valueFrom) are admitted unread.
import { type Static, Type } from '@sinclair/typebox';
import { Enum, LabelSelectorSchema, Unimplemented } from './common.js';

const StringMap = () => Type.Optional(Type.Record(Type.String(), Type.String()));

/** An int or a percentage (`25%`), as Kubernetes' intstr fields of rollouts and budgets take it. */
const IntOrPercent = () =>
  Type.Optional(Type.Union([Type.Integer({ minimum: 0 }), Type.String({ pattern: '^[0-9]+%$' })]));

/** A resource quantity: an integer or Kubernetes' quantity string (`500m`, `1.5Gi`, `2`). */
const QuantitySchema = Type.Union([
  Type.Integer({ minimum: 0 }),
  Type.String({ pattern: '^[0-9]+(\\.[0-9]+)?([eE][0-9]+|[munkMGTPE]|[KMGTPE]i)?$' }),
]);

const RollingUpdateSchema = Type.Object({ maxSurge: IntOrPercent(), maxUnavailable: IntOrPercent() });

export const ResourceRequirementsSchema = Type.Object({
  limits: Type.Optional(Type.Record(Type.String(), QuantitySchema)),
  requests: Type.Optional(Type.Record(Type.String(), QuantitySchema)),
  claims: Unimplemented(),
});

const SeccompProfileSchema = Type.Object({
  type: Enum(['RuntimeDefault', 'Localhost', 'Unconfined'] as const),
  localhostProfile: Type.Optional(Type.String()),
});

export const PodSecurityContextSchema = Type.Object({
  runAsUser: Type.Optional(Type.Integer({ minimum: 0 })),
  runAsGroup: Type.Optional(Type.Integer({ minimum: 0 })),
  runAsNonRoot: Type.Optional(Type.Boolean()),
  fsGroup: Type.Optional(Type.Integer({ minimum: 0 })),
  fsGroupChangePolicy: Type.Optional(Enum(['OnRootMismatch', 'Always'] as const)),
  supplementalGroups: Type.Optional(Type.Array(Type.Integer({ minimum: 0 }))),
  supplementalGroupsPolicy: Type.Optional(Enum(['Merge', 'Strict'] as const)),
  seccompProfile: Type.Optional(SeccompProfileSchema),
  seLinuxOptions: Unimplemented(),
  appArmorProfile: Unimplemented(),
  sysctls: Unimplemented(),
  windowsOptions: Unimplemented(),
});
export type PodSecurityContext = Static<typeof PodSecurityContextSchema>;

export const ContainerSecurityContextSchema = Type.Object({
  runAsUser: Type.Optional(Type.Integer({ minimum: 0 })),
  runAsGroup: Type.Optional(Type.Integer({ minimum: 0 })),
  runAsNonRoot: Type.Optional(Type.Boolean()),
  allowPrivilegeEscalation: Type.Optional(Type.Boolean()),
  readOnlyRootFilesystem: Type.Optional(Type.Boolean()),
  privileged: Type.Optional(Type.Boolean()),
  capabilities: Type.Optional(
    Type.Object({
      add: Type.Optional(Type.Array(Type.String({ maxLength: 64 }), { maxItems: 16 })),
      drop: Type.Optional(Type.Array(Type.String({ maxLength: 64 }), { maxItems: 64 })),
    }),
  ),
  seccompProfile: Type.Optional(SeccompProfileSchema),
  procMount: Type.Optional(Enum(['Default', 'Unmasked'] as const)),
  seLinuxOptions: Unimplemented(),
  appArmorProfile: Unimplemented(),
  windowsOptions: Unimplemented(),
});
export type ContainerSecurityContext = Static<typeof ContainerSecurityContextSchema>;

const TolerationSchema = Type.Object({
  key: Type.Optional(Type.String()),
  operator: Type.Optional(Enum(['Exists', 'Equal'] as const)),
  value: Type.Optional(Type.String()),
  effect: Type.Optional(Enum(['NoSchedule', 'PreferNoSchedule', 'NoExecute'] as const)),
  tolerationSeconds: Type.Optional(Type.Integer()),
});

const TopologySpreadConstraintSchema = Type.Object({
  maxSkew: Type.Integer({ minimum: 1 }),
  topologyKey: Type.String({ minLength: 1 }),
  whenUnsatisfiable: Enum(['DoNotSchedule', 'ScheduleAnyway'] as const),
  labelSelector: Type.Optional(LabelSelectorSchema),
  minDomains: Type.Optional(Type.Integer({ minimum: 1 })),
  nodeAffinityPolicy: Type.Optional(Enum(['Honor', 'Ignore'] as const)),
  nodeTaintsPolicy: Type.Optional(Enum(['Honor', 'Ignore'] as const)),
  matchLabelKeys: Type.Optional(Type.Array(Type.String())),
});

const EnvVarSchema = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 256 }),
  value: Type.Optional(Type.String()),
  valueFrom: Unimplemented(),
});

const MetricTargetSchema = Type.Object({
  type: Enum(['Utilization', 'Value', 'AverageValue'] as const),
  averageUtilization: Type.Optional(Type.Integer({ minimum: 1 })),
  averageValue: Type.Optional(QuantitySchema),
  value: Type.Optional(QuantitySchema),
});

const MetricSpecSchema = Type.Object({
  type: Enum(['Resource', 'ContainerResource', 'Pods', 'Object', 'External'] as const),
  resource: Type.Optional(Type.Object({ name: Type.String({ minLength: 1 }), target: MetricTargetSchema })),
  containerResource: Unimplemented(),
  pods: Unimplemented(),
  object: Unimplemented(),
  external: Unimplemented(),
});

const ScalingRulesSchema = Type.Object({
  stabilizationWindowSeconds: Type.Optional(Type.Integer({ minimum: 0, maximum: 3600 })),
  selectPolicy: Type.Optional(Enum(['Max', 'Min', 'Disabled'] as const)),
  policies: Type.Optional(
    Type.Array(
      Type.Object({
        type: Enum(['Pods', 'Percent'] as const),
        value: Type.Integer({ minimum: 1 }),
        periodSeconds: Type.Integer({ minimum: 1, maximum: 1800 }),
      }),
    ),
  ),
  tolerance: Type.Optional(QuantitySchema),
});

export const FleetShapeSchema = Type.Object({
  deployment: Type.Optional(
    Type.Object({
      replicas: Type.Optional(Type.Integer({ minimum: 0 })),
      strategy: Type.Optional(
        Type.Object({
          type: Type.Optional(Enum(['RollingUpdate', 'Recreate'] as const)),
          rollingUpdate: Type.Optional(RollingUpdateSchema),
        }),
      ),
    }),
  ),
  daemonSet: Type.Optional(
    Type.Object({
      updateStrategy: Type.Optional(
        Type.Object({
          type: Type.Optional(Enum(['RollingUpdate', 'OnDelete'] as const)),
          rollingUpdate: Type.Optional(RollingUpdateSchema),
        }),
      ),
    }),
  ),
  horizontalPodAutoscaler: Type.Optional(
    Type.Object({
      minReplicas: Type.Optional(Type.Integer({ minimum: 1 })),
      maxReplicas: Type.Integer({ minimum: 1 }),
      metrics: Type.Optional(Type.Array(MetricSpecSchema, { maxItems: 16 })),
      behavior: Type.Optional(
        Type.Object({
          scaleUp: Type.Optional(ScalingRulesSchema),
          scaleDown: Type.Optional(ScalingRulesSchema),
        }),
      ),
    }),
  ),
  podDisruptionBudget: Type.Optional(
    Type.Object({
      minAvailable: IntOrPercent(),
      maxUnavailable: IntOrPercent(),
      unhealthyPodEvictionPolicy: Type.Optional(Enum(['IfHealthyBudget', 'AlwaysAllow'] as const)),
    }),
  ),
  pod: Type.Optional(
    Type.Object({
      labels: StringMap(),
      annotations: StringMap(),
      nodeSelector: StringMap(),
      tolerations: Type.Optional(Type.Array(TolerationSchema)),
      affinity: Type.Optional(
        Type.Object({
          nodeAffinity: Unimplemented(),
          podAffinity: Unimplemented(),
          podAntiAffinity: Unimplemented(),
        }),
      ),
      topologySpreadConstraints: Type.Optional(Type.Array(TopologySpreadConstraintSchema)),
      priorityClassName: Type.Optional(Type.String({ minLength: 1 })),
      securityContext: Type.Optional(PodSecurityContextSchema),
      imagePullSecrets: Type.Optional(Type.Array(Type.Object({ name: Type.String({ minLength: 1 }) }))),
      terminationGracePeriodSeconds: Type.Optional(Type.Integer({ minimum: 0 })),
    }),
  ),
  container: Type.Optional(
    Type.Object({
      resources: Type.Optional(ResourceRequirementsSchema),
      env: Type.Optional(Type.Array(EnvVarSchema, { maxItems: 64 })),
      securityContext: Type.Optional(ContainerSecurityContextSchema),
    }),
  ),
  service: Type.Optional(
    Type.Object({
      type: Type.Optional(Enum(['LoadBalancer', 'NodePort', 'ClusterIP'] as const)),
      annotations: StringMap(),
      externalTrafficPolicy: Type.Optional(Enum(['Cluster', 'Local'] as const)),
      loadBalancerClass: Type.Optional(Type.String({ minLength: 1 })),
      loadBalancerSourceRanges: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
      allocateLoadBalancerNodePorts: Type.Optional(Type.Boolean()),
    }),
  ),
});
export type FleetShape = Static<typeof FleetShapeSchema>;
