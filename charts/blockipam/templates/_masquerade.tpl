{{- /*
blockipam.validateMasquerade: fails naming the first masquerade.nonMasqueradeCIDRs entry with host
bits set (values.schema.json checks each entry's form per family; the agent refuses such a CIDR
at start, so it would crash-loop on every node instead). Renders nothing otherwise. Uses the
bit-string helpers of _pools.tpl.
*/ -}}
{{- define "blockipam.validateMasquerade" -}}
{{- range $i, $c := .Values.masquerade.nonMasqueradeCIDRs -}}
{{- $parts := splitList "/" $c -}}
{{- $len := atoi (index $parts 1) -}}
{{- $bits := include "blockipam.addrBits" (index $parts 0) -}}
{{- if contains "1" (substr $len (len $bits) $bits) -}}
{{- $masked := printf "%s/%d" (include "blockipam.bitsAddr" (printf "%s%s" (substr 0 $len $bits) (repeat (int (sub (len $bits) $len)) "0"))) $len -}}
{{- fail (printf "masquerade.nonMasqueradeCIDRs[%d] %q has host bits set (the address bits after /%d must be 0): the network is %s" $i $c $len $masked) -}}
{{- end -}}
{{- end -}}
{{- end -}}
