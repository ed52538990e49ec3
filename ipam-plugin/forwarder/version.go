package main

import "encoding/json"

// supportedVersions are the CNI versions the plugin speaks, oldest first: core/cni/versions.ts
// supportedVersions (test/plugin/forwarder.int.test.ts compares this answer with the TypeScript
// executable's).
var supportedVersions = []string{"0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"}

// currentVersion is the newest of supportedVersions: VERSION's answer when stdin names none of them.
const currentVersion = "1.1.0"

// answerVersion answers VERSION as core/cni/commands/version.ts does — {cniVersion,
// supportedVersions}, cniVersion echoing stdin's when it is a supported one — when the direct
// path that normally answers it is missing (VERSION needs no IPAM). Stdin that cannot be read or
// parsed names no version. Returns 0, or exitCniError when stdout cannot take the answer.
func answerVersion() int {
	requested := currentVersion
	if stdin, err := readStdin(); err == nil {
		var doc map[string]json.RawMessage
		var v string
		if json.Unmarshal(stdin, &doc) == nil && stringField(doc, "cniVersion", &v) {
			for _, s := range supportedVersions {
				if s == v {
					requested = v
				}
			}
		}
	}
	line, _ := marshal(struct {
		CNIVersion        string   `json:"cniVersion"`
		SupportedVersions []string `json:"supportedVersions"`
	}{requested, supportedVersions})
	if writeAll(1, string(line)) != nil {
		return exitCniError
	}
	return 0
}
