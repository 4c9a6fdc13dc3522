{{/* The release's name for its objects (63 characters at most). */}}
{{- define "coopcache.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "coopcache.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "coopcache.labels" -}}
{{ include "coopcache.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "coopcache.peersService" -}}
{{- printf "%s-peers" (include "coopcache.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
A size as the daemon reads it (budget::parse_size: a whole number and an
optional unit, B, K, KB, KiB ... T, TB, TiB, any case, each a power of 1024),
in bytes. values.schema.json admits only such sizes.
*/}}
{{- define "coopcache.bytes" -}}
{{- $s := . | toString | trim | lower -}}
{{- $num := regexFind "^[0-9]+" $s -}}
{{- if not $num -}}
{{- fail (printf "size %q: expected a whole number with an optional unit, like 2GiB" .) -}}
{{- end -}}
{{- $unit := trimPrefix $num $s | trim -}}
{{- $units := dict "" 1 "b" 1 "k" 1024 "kb" 1024 "kib" 1024 "m" 1048576 "mb" 1048576 "mib" 1048576 "g" 1073741824 "gb" 1073741824 "gib" 1073741824 "t" 1099511627776 "tb" 1099511627776 "tib" 1099511627776 -}}
{{- if not (hasKey $units $unit) -}}
{{- fail (printf "size %q: unknown unit %q (expected B, KiB, MiB, GiB or TiB)" . $unit) -}}
{{- end -}}
{{- mul ($num | int64) (get $units $unit | int64) -}}
{{- end -}}

{{/*
The container's memory limit in MiB, derived from config.memory the way
deploy/coopcache.service's MemoryMax is: resident memory stays within the
larger of 1.1 x the budget and the budget + 24 MiB (docs/benchmarks.md,
`coopcache bench rss`); the limit lies above that, at the larger of 1.25 x
the budget and that bound + 64 MiB (2560Mi for 2GiB, MemoryMax=2560M in the
unit), since at the limit the kernel kills the daemon and the cgroup also
counts the page cache of origin reads.
*/}}
{{- define "coopcache.memoryLimitMiB" -}}
{{- $bytes := include "coopcache.bytes" (.Values.config.memory | default "2GiB") | int64 -}}
{{- $budget := div (add $bytes 1048575) 1048576 -}}
{{- $resident := max (div (mul $budget 11) 10) (add $budget 24) -}}
{{- max (div (mul $budget 5) 4) (add $resident 64) -}}
{{- end -}}

{{- define "coopcache.memoryLimit" -}}
{{- if .Values.resources.limits.memory -}}
{{- .Values.resources.limits.memory -}}
{{- else -}}
{{- printf "%sMi" (include "coopcache.memoryLimitMiB" .) -}}
{{- end -}}
{{- end -}}

{{/* Where the pod's files are. */}}
{{- define "coopcache.dataDir" -}}/var/lib/coopcache{{- end -}}
{{- define "coopcache.tokenFile" -}}/run/coopcache/http-token/token{{- end -}}
{{- define "coopcache.mountDir" -}}/mnt/coopcache{{- end -}}
{{- define "coopcache.diskDir" -}}/var/cache/coopcache{{- end -}}
{{- define "coopcache.binary" -}}/usr/local/bin/coopcache{{- end -}}
