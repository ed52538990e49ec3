package main

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"syscall"
	"time"
)

// maxStdinBytes bounds the stdin the forwarder reads (bytes): 64 MiB, the direct path's bound
// (ipam-plugin/host/stdio.ts maxStdinBytes: a GC listing every attachment of a node). A call
// whose request would exceed the agent's maxRequestBytes goes to the direct path.
const maxStdinBytes = 64 << 20

// defaultCniVersion is the cniVersion of an error document when the netconf names none (as the
// TypeScript plugin's errorVersion).
const defaultCniVersion = "1.1.0"

// defaultTimeoutMs is `ipam.timeoutMs` when the netconf sets none (core/cni/netconf.ts).
const defaultTimeoutMs = 30_000

// minTimeoutMs and maxTimeoutMs bound `ipam.timeoutMs` (core/cni/netconf-schema.ts); a value
// outside them goes to the direct path, whose validation names it.
const (
	minTimeoutMs = 100
	maxTimeoutMs = 600_000
)

// netconf holds the four fields the forwarder needs; everything else is the agent's to validate.
type netconf struct {
	// cniVersion is the top-level `cniVersion` when it is a string, else defaultCniVersion.
	cniVersion string
	// agentSocket is `ipam.agentSocket`, an absolute path.
	agentSocket string
	// timeout is `ipam.timeoutMs` (default defaultTimeoutMs): connect, send and answer.
	timeout time.Duration
	// logFile, logLevel and network are `ipam.logFile`, `ipam.logLevel` and the top-level `name`
	// when they are strings (else ""): where and how a forwarded call is logged (log.go).
	logFile, logLevel, network string
}

// cniError is a failure reported to the runtime as {cniVersion, code, msg, details} on stdout.
type cniError struct {
	code    int
	msg     string
	details string
}

func (e *cniError) Error() string { return fmt.Sprintf("%s: %s", e.msg, e.details) }

// readStdin reads fd 0 to its end, at most maxStdinBytes.
// Errors: *cniError 6 when stdin holds more, or cannot be read (a directory: EISDIR).
func readStdin() ([]byte, error) {
	buf := make([]byte, 0, 16<<10)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := syscall.Read(0, buf[len(buf):cap(buf)])
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			// a non-blocking pipe the runtime handed over: wait for it
			waitReadable(0)
			continue
		case err != nil:
			return nil, &cniError{6, "cannot read the network configuration from stdin", err.Error()}
		case n == 0:
			return buf, nil
		}
		buf = buf[:len(buf)+n]
		if len(buf) > maxStdinBytes {
			return nil, &cniError{6, "network configuration too large", fmt.Sprintf("stdin holds more than %d bytes", maxStdinBytes)}
		}
	}
}

// parseNetconf finds the fields the forwarder needs in stdin.
// Returns ok false when the call belongs to the direct path: stdin is not a JSON object, `ipam`
// is not an object, `ipam.agentSocket` is absent or not a path isSocketPath accepts, `ipam.mode` is not
// "agent" (absent is "agent" when a socket is set), or `ipam.timeoutMs` is not an integer from
// 100 to 600000 (1000.0 is one, as for JSON.parse). The direct path then validates the netconf
// and answers as it always has. The same rule as core/cni/forward.ts forwardTarget.
// Keys match exactly (a map, not a struct: encoding/json would match struct fields ignoring case).
func parseNetconf(stdin []byte) (conf netconf, ok bool) {
	conf.cniVersion = defaultCniVersion
	var top map[string]json.RawMessage
	if json.Unmarshal(stdin, &top) != nil || top == nil {
		return conf, false
	}
	stringField(top, "cniVersion", &conf.cniVersion)
	stringField(top, "name", &conf.network)
	var ipam map[string]json.RawMessage
	if json.Unmarshal(top["ipam"], &ipam) != nil || ipam == nil {
		return conf, false
	}
	if !stringField(ipam, "agentSocket", &conf.agentSocket) || !isSocketPath(conf.agentSocket) {
		return conf, false
	}
	if raw, set := ipam["mode"]; set {
		var mode string
		if json.Unmarshal(raw, &mode) != nil || mode != "agent" {
			return conf, false
		}
	}
	ms := float64(defaultTimeoutMs)
	if raw, set := ipam["timeoutMs"]; set {
		var ok bool
		if ms, ok = number(raw); !ok || ms != math.Trunc(ms) || ms < minTimeoutMs || ms > maxTimeoutMs {
			return conf, false
		}
	}
	conf.timeout = time.Duration(ms) * time.Millisecond
	stringField(ipam, "logFile", &conf.logFile)
	stringField(ipam, "logLevel", &conf.logLevel)
	return conf, true
}

// maxSocketPathBytes bounds `ipam.agentSocket` (bytes): sun_path holds 108 with its NUL (unix(7)).
const maxSocketPathBytes = 107

// isSocketPath reports whether path is one the forwarder may connect to: absolute (never
// relative to the runtime's working directory, never "@…", which Go's SockaddrUnix takes as an
// abstract socket — one any process of the network namespace may own, with no file
// permissions), at most maxSocketPathBytes bytes, no NUL byte (the kernel would cut the path
// there). The netconf schema refuses anything else, so such a call goes to the direct path,
// which names the field (code 7). The same rule as core/cni/forward.ts isSocketPath.
func isSocketPath(path string) bool {
	return strings.HasPrefix(path, "/") && !strings.ContainsRune(path, 0) && len(path) <= maxSocketPathBytes
}

// stringField sets *out to m[key] when that is a JSON string; false (and *out unchanged) when
// absent or not a string.
func stringField(m map[string]json.RawMessage, key string, out *string) bool {
	raw, set := m[key]
	return set && raw[0] == '"' && json.Unmarshal(raw, out) == nil
}

// waitReadable blocks until fd is readable (or has hung up).
func waitReadable(fd int) {
	waitFd(fd, false)
}

// waitWritable blocks until fd is writable (or its reader has gone).
func waitWritable(fd int) {
	waitFd(fd, true)
}

// waitFd blocks in select(2) until fd is ready for reading or writing; fds above 1023 are
// waited for by a 1 ms sleep instead (select's fd_set holds 1024).
func waitFd(fd int, write bool) {
	if fd >= 1024 {
		time.Sleep(time.Millisecond)
		return
	}
	var set syscall.FdSet
	set.Bits[fd/64] |= 1 << (uint(fd) % 64)
	if write {
		_, _ = syscall.Select(fd+1, nil, &set, nil, nil)
	} else {
		_, _ = syscall.Select(fd+1, &set, nil, nil, nil)
	}
}
