// Command blockipam-forwarder is the executable the container runtime calls as the CNI IPAM
// plugin `blockipam` when the node agent serves IPAM (docs/design-plugin.md §"Start-up").
//
// It forwards one CNI call to the node agent over its Unix socket in the raw CNI call wire (node
// IPAM protocol v2): one JSON line {"v":2,"env":{CNI_*},"stdin":"…"} out, one JSON line
// {"v":2,"code":N,"stdout":"…","stderr":"…"} back, written to fd 1 and fd 2 verbatim and returned
// as the exit code. The agent validates the call and formats every answer, so the forwarder reads
// only the netconf fields it needs to forward — `cniVersion`, `ipam.agentSocket`, `ipam.mode`,
// `ipam.timeoutMs` — and to log the call: `ipam.logFile`, `ipam.logLevel`, `name`.
//
// Every call it does not forward goes to the DIRECT PATH: the TypeScript executable installed
// beside it as `blockipam-direct` is exec'd with argv[0] "blockipam", the same environment plus
// BLOCKIPAM_DIRECT (directEnv: the decision is made here, once; the direct path never connects)
// and the same stdin, and answers as the plugin always has. That is the case when CNI_COMMAND is
// not one of ADD, DEL, CHECK, GC, STATUS (VERSION above all), when the request would exceed the
// agent's 1 MiB (a GC listing tens of thousands of attachments; stdin is read up to 64 MiB, the
// direct path's bound), when stdin is not a JSON object (or nests deeper than encoding/json
// reads), when the netconf has no usable `ipam.agentSocket`, says `ipam.mode: standalone` or
// holds a field the forwarder would have to guess about (the direct path names it in its
// validation error), and when connect() fails in a way that proves the agent never saw the call
// (fallbackErrnos). The rule is core/cni/forward.ts forwardTarget's, mirrored.
//
// Like the TypeScript executable, it appends a forwarded call's lines to `ipam.logFile` (the
// agent's warn lines, its own error line, a `done` line with path "agent"; log.go).
//
// Client-side failures are CNI error documents on stdout and exit code 1, in the words of the
// TypeScript thin client (ipam-plugin/backend/agent-client.ts): no connection within the budget,
// no answer within `ipam.timeoutMs`, a connection closed before a complete answer → 11; an
// answer that is not the v2 shape or over 1 MiB → 999; stdin over 64 MiB → 6.
//
// Standard library only; no goroutines of its own, no netpoller: raw syscalls with socket
// timeouts, so a call costs little more than the Go runtime's start (~2 ms of CPU).
package main

import (
	"errors"
	"os"
	"time"
)

// Exit codes of the forwarder itself (the agent's answers carry their own).
const (
	// exitCniError is the exit code with a CNI error document on stdout (CNI spec §"Error").
	exitCniError = 1
)

// forwardedCommands are the CNI commands the agent serves; any other CNI_COMMAND (VERSION, a
// typo, none) goes to the direct path, which answers or refuses it as the plugin always has.
var forwardedCommands = map[string]bool{"ADD": true, "DEL": true, "CHECK": true, "GC": true, "STATUS": true}

func main() {
	os.Exit(run())
}

// run forwards the call and returns the exit code, or replaces the process with the direct path
// (it then returns only when that exec failed, with that error reported).
func run() int {
	if !forwardedCommands[os.Getenv("CNI_COMMAND")] {
		// Stdin untouched: the direct path reads it itself.
		return direct(nil, decided)
	}
	stdin, err := readStdin()
	if err != nil {
		return fail(defaultCniVersion, err)
	}
	if len(stdin) > maxRequestBytes {
		return direct(stdin, decided) // cannot fit in a request: not parsed here
	}
	conf, ok := parseNetconf(stdin)
	if !ok {
		return direct(stdin, decided)
	}
	line := requestLine(stdin)
	if len(line)-1 > maxRequestBytes {
		return direct(stdin, decided)
	}
	started := time.Now()
	answer, err := forward(conf, line)
	var fb *fallbackError
	if errors.As(err, &fb) {
		return direct(stdin, fb.errno+" "+conf.agentSocket)
	}
	if err != nil {
		return failForwarded(conf, err, started)
	}
	logForwarded(conf, answer.stderr, answer.code, started)
	return deliver(answer)
}
