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

{{/* The objects of deploy/'s component and monitoring files (files/ links to them), each
     with the chart's labels, and braid's namespace where the file names braid-system (for the
     object, and for the ServiceAccounts a binding names). Called with (list $ FILE...). */}}
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
---
{{ toYaml $object }}
{{- end }}
{{- end }}
{{- end }}
{{- end -}}
