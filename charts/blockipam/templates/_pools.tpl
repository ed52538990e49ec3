{{- /*
Template-time checks of `pools` that values.schema.json cannot express (it checks each value's
syntax and ranges: the CIDR's form per family, prefix lengths, blockSize 20-30 / 116-126). A
failed check stops `helm install|upgrade|template` before any release object is sent, with a
message naming the value (`pools[1].cidr …`). The rules are the IPPool CRD's (crds/ippools.yaml:
strictly masked and canonical, no link-local, loopback or multicast overlap, a pool holds at least one block) and
core's validatePool (no two pools overlap), so the API server and the controller never see a
pool they would refuse.

Addresses are handled as strings of '0'/'1' (32 or 128 characters): Helm's functions have no
CIDR or 128-bit arithmetic.
*/ -}}

{{- /* blockipam.addrBits: an address ("10.244.0.0", "fd00:10:244::") → its bits ("0000101011110100…"). */ -}}
{{- define "blockipam.addrBits" -}}
{{- if contains ":" . -}}
{{- $hex := dict "0" "0000" "1" "0001" "2" "0010" "3" "0011" "4" "0100" "5" "0101" "6" "0110" "7" "0111" "8" "1000" "9" "1001" "a" "1010" "b" "1011" "c" "1100" "d" "1101" "e" "1110" "f" "1111" -}}
{{- $halves := splitList "::" . -}}
{{- $left := list -}}
{{- with index $halves 0 }}{{ $left = splitList ":" . }}{{ end -}}
{{- $right := list -}}
{{- if gt (len $halves) 1 }}{{ with index $halves 1 }}{{ $right = splitList ":" . }}{{ end }}{{ end -}}
{{- $groups := $left -}}
{{- if gt (len $halves) 1 -}}
{{- range until (int (sub 8 (add (len $left) (len $right)))) }}{{ $groups = append $groups "0" }}{{ end -}}
{{- end -}}
{{- range concat $groups $right -}}
{{- range splitList "" (trunc -4 (printf "0000%s" .)) }}{{ index $hex . }}{{ end -}}
{{- end -}}
{{- else -}}
{{- range splitList "." . -}}
{{- $n := atoi . -}}
{{- range list 128 64 32 16 8 4 2 1 }}{{ mod (div $n .) 2 }}{{ end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- /* blockipam.bitsAddr: 32 or 128 bits → the address in canonical text (IPv6: RFC 5952, as
Go's netip and the CRD's CEL `string(cidr(…))` write it: lower-case, no leading zeros, the
longest run of two or more zero groups — the first of equal runs — as "::"). */ -}}
{{- define "blockipam.bitsAddr" -}}
{{- $bits := . -}}
{{- $width := ternary 16 8 (eq (len $bits) 128) -}}
{{- $groups := list -}}
{{- range $k := until (int (div (len $bits) $width)) -}}
{{- $v := 0 -}}
{{- range splitList "" (substr (int (mul $k $width)) (int (mul (add $k 1) $width)) $bits) }}{{ $v = add (mul $v 2) (atoi .) }}{{ end -}}
{{- $groups = append $groups (ternary (printf "%x" $v) (printf "%d" $v) (eq $width 16)) -}}
{{- end -}}
{{- if eq $width 8 -}}
{{- join "." $groups -}}
{{- else -}}
{{- $best := -1 }}{{ $bestLen := 0 }}{{ $cur := -1 }}{{ $curLen := 0 -}}
{{- range $k, $g := $groups -}}
{{- if eq $g "0" -}}
{{- if lt $cur 0 }}{{ $cur = $k }}{{ $curLen = 0 }}{{ end -}}
{{- $curLen = add $curLen 1 -}}
{{- if gt $curLen $bestLen }}{{ $best = $cur }}{{ $bestLen = $curLen }}{{ end -}}
{{- else -}}
{{- $cur = -1 -}}
{{- end -}}
{{- end -}}
{{- if ge $bestLen 2 -}}
{{- join ":" (slice $groups 0 $best) }}::{{ join ":" (slice $groups (int (add $best $bestLen)) 8) -}}
{{- else -}}
{{- join ":" $groups -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- /* blockipam.validatePools: fails naming the first bad value; renders nothing otherwise. */ -}}
{{- define "blockipam.validatePools" -}}
{{- /* the ranges no pool may overlap (the IPPool CRD's rules): link-local, loopback, multicast */ -}}
{{- $reserved := list -}}
{{- range $r := list (list "link-local" "169.254.0.0" 16) (list "link-local" "fe80::" 10) (list "loopback" "127.0.0.0" 8) (list "loopback" "::1" 128) (list "multicast" "224.0.0.0" 4) (list "multicast" "ff00::" 8) -}}
{{- $reserved = append $reserved (dict "kind" (index $r 0) "cidr" (printf "%s/%d" (index $r 1) (index $r 2)) "v6" (contains ":" (index $r 1)) "len" (index $r 2) "bits" (include "blockipam.addrBits" (index $r 1))) -}}
{{- end -}}
{{- $seen := list -}}
{{- range $i, $p := .Values.pools -}}
{{- $where := printf "pools[%d]" $i -}}
{{- range $other := $seen -}}
{{- if eq $other.name $p.name -}}
{{- fail (printf "%s.name %q is also %s.name: pool names must be unique" $where $p.name $other.where) -}}
{{- end -}}
{{- end -}}
{{- $parts := splitList "/" $p.cidr -}}
{{- $len := atoi (index $parts 1) -}}
{{- $v6 := contains ":" $p.cidr -}}
{{- /* lower: the schema lets upper-case IPv6 through so that the message below can say how to write it */}}
{{- $bits := include "blockipam.addrBits" (lower (index $parts 0)) -}}
{{- $masked := printf "%s/%d" (include "blockipam.bitsAddr" (printf "%s%s" (substr 0 $len $bits) (repeat (int (sub (len $bits) $len)) "0"))) $len -}}
{{- if contains "1" (substr $len (len $bits) $bits) -}}
{{- fail (printf "%s.cidr %q has host bits set (the address bits after /%d must be 0): the network is %s" $where $p.cidr $len $masked) -}}
{{- end -}}
{{- if ne $masked $p.cidr -}}
{{- fail (printf "%s.cidr %q is not in canonical form (lower-case, no leading zeros, the shortest IPv6 form): write %s" $where $p.cidr $masked) -}}
{{- end -}}
{{- $blockSize := int ($p.blockSize | default (ternary 122 26 $v6)) -}}
{{- if gt $len $blockSize -}}
{{- fail (printf "%s.cidr %s is smaller than one block: its prefix length must be at most %s (%d)" $where $p.cidr (ternary (printf "%s.blockSize" $where) "the default blockSize" (hasKey $p "blockSize")) $blockSize) -}}
{{- end -}}
{{- range $other := concat $reserved $seen -}}
{{- $common := int (min $len $other.len) -}}
{{- if and (eq $v6 $other.v6) (eq (substr 0 $common $bits) (substr 0 $common $other.bits)) -}}
{{- if hasKey $other "name" -}}
{{- fail (printf "%s.cidr %s overlaps %s.cidr %s (pool %q): pools must not overlap" $where $p.cidr $other.where $other.cidr $other.name) -}}
{{- else -}}
{{- fail (printf "%s.cidr %s overlaps the %s range %s" $where $p.cidr $other.kind $other.cidr) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $seen = append $seen (dict "name" $p.name "where" $where "cidr" $p.cidr "v6" $v6 "len" $len "bits" $bits) -}}
{{- end -}}
{{- end -}}
