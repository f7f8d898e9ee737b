{{/* Prefix of cluster-scoped names: tenant releases in other namespaces get their own. */}}
{{- define "portico.clusterPrefix" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else if eq .Release.Namespace "portico-gateway-system" -}}
gateway-helm
{{- else -}}
{{- printf "gateway-helm-%s" .Release.Namespace | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "portico.labels" -}}
app.kubernetes.io/name: portico-gateway
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "portico.selector" -}}
app.kubernetes.io/name: portico-gateway
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: controller
{{- end -}}

{{- define "portico.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}

{{/* Namespaces the controller watches for Gateway API objects; empty means all. */}}
{{- define "portico.watchRestricted" -}}
{{- if eq .Values.config.watch.type "Namespaces" -}}true{{- end -}}
{{- end -}}

{{- define "portico.securityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
capabilities:
  drop: [ALL]
seccompProfile:
  type: RuntimeDefault
{{- end -}}
