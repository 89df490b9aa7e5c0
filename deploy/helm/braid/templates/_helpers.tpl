{{/* The namespace of braid's objects. */}}
{{- define "braid.namespace" -}}
{{- .Values.namespace.name | default .Release.Namespace -}}
{{- end -}}

{{/* The labels of every object: braid's own (as deploy/base sets them) and Helm's. */}}
{{- define "braid.labels" -}}
app.kubernetes.io/part-of: braid
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* The image of both containers: repository, then the digest, or the tag (appVersion when empty). */}}
{{- define "braid.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end -}}

{{/* The options that need a component's rights, refused without it. */}}
{{- define "braid.checkOptions" -}}
{{- if and (eq (toString (.Values.config.daemonMetricsAuth | default "none")) "kubernetes") (not .Values.metricsAuth.enabled) -}}
{{- fail "config.daemonMetricsAuth is \"kubernetes\": set metricsAuth.enabled=true too (the daemon needs its token and access reviews)" -}}
{{- end -}}
{{- if and .Values.config.thinKubeconfig (not .Values.braidThin.enabled) -}}
{{- fail "config.thinKubeconfig is set: set braidThin.enabled=true too (braid-thin's identity)" -}}
{{- end -}}
{{- end -}}

{{/* The objects of deploy/'s component and monitoring files (files/ holds copies written by
     hack/helm/gen-chart.py), each with the chart's labels, and braid's namespace where the
     file names braid-system (for the object, the ServiceAccounts a binding names and the
     Service a webhook calls). Called with (list $ FILE...). */}}
{{- define "braid.fromFiles" -}}
{{- $root := first . -}}
{{- $namespace := include "braid.namespace" $root -}}
{{- $labels := include "braid.labels" $root | fromYaml -}}
{{- range $file := rest . }}
{{- range $doc := regexSplit "(?m)^---[ \t]*$" ($root.Files.Get $file) -1 }}
{{- $object := fromYaml $doc }}
{{- if $object }}
{{- $meta := $object.metadata }}
{{- $_ := set $meta "labels" (merge (dict) ($meta.labels | default dict) $labels) }}
{{- if eq ($meta.namespace | default "") "braid-system" }}
{{- $_ := set $meta "namespace" $namespace }}
{{- end }}
{{- range $subject := $object.subjects | default list }}
{{- if eq ($subject.namespace | default "") "braid-system" }}
{{- $_ := set $subject "namespace" $namespace }}
{{- end }}
{{- end }}
{{- range $webhook := $object.webhooks | default list }}
{{- include "braid.webhook" (list $root $webhook $namespace) }}
{{- end }}
{{- if $object.spec }}{{- if $object.spec.template }}
{{- include "braid.podImage" (list $root $object.spec.template.spec) }}
{{- end }}{{- end }}
---
{{ toYaml $object }}
{{- end }}
{{- end }}
{{- end }}
{{- end -}}

{{/* A webhook of a file: the Service in braid's namespace, and nadWebhook.failurePolicy.
     Called with (list $ WEBHOOK NAMESPACE). */}}
{{- define "braid.webhook" -}}
{{- $root := index . 0 -}}
{{- $webhook := index . 1 -}}
{{- $service := $webhook.clientConfig.service | default dict -}}
{{- if eq ($service.namespace | default "") "braid-system" -}}
{{- $_ := set $service "namespace" (index . 2) -}}
{{- end -}}
{{- $_ := set $webhook "failurePolicy" (dig "failurePolicy" "Ignore" ($root.Values.nadWebhook | default dict)) -}}
{{- end -}}

{{/* A pod of a file running braid's image: the chart's image, pull policy and pull secrets.
     Called with (list $ POD-SPEC). */}}
{{- define "braid.podImage" -}}
{{- $root := index . 0 -}}
{{- $pod := index . 1 -}}
{{- range $container := $pod.containers -}}
{{- if hasPrefix "registry.example/braid-cni/braid:" $container.image -}}
{{- $_ := set $container "image" (include "braid.image" $root) -}}
{{- with $root.Values.image.pullPolicy -}}
{{- $_ := set $container "imagePullPolicy" . -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- with $root.Values.imagePullSecrets -}}
{{- $_ := set $pod "imagePullSecrets" . -}}
{{- end -}}
{{- end -}}
