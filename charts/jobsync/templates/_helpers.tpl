{{/*
The one renderer of jobsync's cluster objects. What each verb is for is in docs/deployment.md
("Authorization"); tests/integration/test_rbac.py checks that the functions' Role grants exactly
what the code calls, both ways.
*/}}

{{/* The namespace: the stack's Namespace, which must be the release's. */}}
{{- define "jobsync.namespace" -}}
{{- if and .Values.namespace (ne .Values.namespace .Release.Namespace) -}}
{{- fail (printf "namespace %q is not the release namespace %q: install with -n %s" .Values.namespace .Release.Namespace .Values.namespace) -}}
{{- end -}}
{{- .Release.Namespace -}}
{{- end -}}

{{- define "jobsync.labels" -}}
app.kubernetes.io/name: jobsync
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/component: {{ .component }}
app.kubernetes.io/part-of: jobsync
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version }}
{{- end -}}

{{/*
The registry entries AllowedKinds names, as JSON: entries are kind names (every API group that
serves one, but for kinds named only by apiVersion: byName false) or apiVersion/Kind, parsed as the functions parse JOBSYNC_ALLOWED_KINDS
(jobsync.settings.parse_allowed_kinds). files/kinds.yaml is the registry, generated from
jobsync.evaluation.kinds.
*/}}
{{- define "jobsync.kinds" -}}
{{- $registry := (.Files.Get "files/kinds.yaml" | fromYaml).kinds -}}
{{- $found := list -}}
{{- range $raw := splitList "," .Values.allowedKinds -}}
{{- $entry := trim $raw -}}
{{- if $entry -}}
{{- $matches := list -}}
{{- if contains "/" $entry -}}
{{- range $registry -}}
{{- if and (eq .kind (base $entry)) (eq .apiVersion (dir $entry)) -}}{{- $matches = append $matches . -}}{{- end -}}
{{- end -}}
{{- else -}}
{{- range $registry -}}
{{- if and (eq .kind $entry) .byName -}}{{- $matches = append $matches . -}}{{- end -}}
{{- end -}}
{{- end -}}
{{- if not $matches -}}
{{- fail (printf "allowedKinds: unknown kind %q (as the stack's AllowedKinds: PyTorchJob,TFJob or apiVersion/Kind)" $entry) -}}
{{- end -}}
{{- $found = concat $found $matches -}}
{{- end -}}
{{- end -}}
{{- if not $found -}}{{- fail "allowedKinds names no kind" -}}{{- end -}}
{{- dict "kinds" $found | toJson -}}
{{- end -}}

{{/* One rule per API group, its resources sorted: (dict "resources" [{group, plural}] "verbs" [...]) as JSON. */}}
{{- define "jobsync.rules" -}}
{{- $byGroup := dict -}}
{{- range .resources -}}
{{- $_ := set $byGroup .group (append (get $byGroup .group | default list) .plural) -}}
{{- end -}}
{{- $rules := list -}}
{{- range $group := keys $byGroup | sortAlpha -}}
{{- $rules = append $rules (dict "apiGroups" (list $group) "resources" (get $byGroup $group | uniq | sortAlpha) "verbs" $.verbs) -}}
{{- end -}}
{{- dict "rules" $rules | toJson -}}
{{- end -}}
