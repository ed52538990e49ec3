{{/* The prefix of every object's name: the release name, or <release>-blockipam. */}}
{{- define "blockipam.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "blockipam.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* selector labels of one component: include "blockipam.selector" (list . "agent") */}}
{{- define "blockipam.selector" -}}
{{- $ := index . 0 -}}
app.kubernetes.io/name: {{ $.Chart.Name }}
app.kubernetes.io/instance: {{ $.Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end -}}

{{/* The node ServiceAccount: the agent's pods run as it. */}}
{{- define "blockipam.nodeServiceAccount" -}}{{ include "blockipam.fullname" . }}-node{{- end -}}
{{/* The plugin's ServiceAccount: no pod runs as it; the agent mints its token bound to the agent's
Node (docs/install.md "Security"). */}}
{{- define "blockipam.pluginServiceAccount" -}}{{ include "blockipam.fullname" . }}-plugin{{- end -}}
{{- define "blockipam.controllerServiceAccount" -}}{{ include "blockipam.fullname" . }}-controller{{- end -}}

{{- define "blockipam.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* The --api-server argument line when apiServer.host is set (IPv6 hosts get brackets), else
nothing; callers write `with include … | nindent`, so an unset host leaves no blank line. */}}
{{- define "blockipam.apiServerArg" -}}
{{- with .Values.apiServer.host -}}
{{- if contains ":" . -}}
- --api-server=https://[{{ . }}]:{{ $.Values.apiServer.port }}
{{- else -}}
- --api-server=https://{{ . }}:{{ $.Values.apiServer.port }}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Whether any pool is IPv6 / IPv4. */}}
{{- define "blockipam.hasIPv6" -}}
{{- range .Values.pools }}{{ if contains ":" .cidr }}true{{ end }}{{ end -}}
{{- end -}}
{{- define "blockipam.hasIPv4" -}}
{{- range .Values.pools }}{{ if not (contains ":" .cidr) }}true{{ end }}{{ end -}}
{{- end -}}

