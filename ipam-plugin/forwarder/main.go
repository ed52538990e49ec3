// Command blockipam-forwarder, the CNI IPAM plugin `blockipam` (docs/design-plugin.md §Forwarder),
// hands each call to the node agent (wire v3, agent.go), or execs `blockipam-direct` beside it —
// the direct path — for a call the agent has not started. It decides and validates nothing.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

const maxStdin = 1 << 20 // the agent's bound (wire.ts MAX_STDIN_BYTES); the direct path reads 64 MiB
const directEnv = "BLOCKIPAM_DIRECT"
const defaultTimeoutMs = 30_000.0 // `ipam.timeoutMs` when unset (core/cni/forward.ts)
// sysMemfdCreate is memfd_create(2), which the syscall package names on arm64 only.
var sysMemfdCreate = map[string]uintptr{"amd64": 319, "arm64": 279}[runtime.GOARCH]
var started = time.Now() // the call's start, for the `done` line's durationMs

// netconf holds the fields the forwarder reads; the agent and the direct path validate the rest.
type netconf struct {
	CNIVersion, Name string
	IPAM             struct{ AgentSocket, LogFile, LogLevel string }
}

func main() { os.Exit(run()) }

// run returns the exit code, or replaces the process with the direct path.
func run() int {
	if !slices.Contains([]string{"ADD", "DEL", "CHECK", "GC", "STATUS"}, os.Getenv("CNI_COMMAND")) {
		return direct(netconf{}, nil, "1")
	}
	stdin, err := io.ReadAll(io.LimitReader(os.Stdin, maxStdin+1))
	conf, timeout, ok := forwardable(stdin)
	if err != nil || !ok {
		return direct(conf, stdin, "1") // the direct path reads the rest, or reports the error itself
	}
	if os.Getenv("CNI_COMMAND") == "STATUS" {
		timeout = min(timeout, statusBudget)
	}
	a, err := call(conf.IPAM.AgentSocket+".v3", stdin, timeout)
	if fb, ok := err.(fallback); ok {
		return direct(conf, stdin, string(fb))
	} else if err != nil {
		return fail(conf, err.(*cniError))
	}
	logCall(conf, a.stderr, a.code)
	_, err = os.Stdout.Write(a.stdout)
	_, _ = os.Stderr.Write(a.stderr)
	if err != nil {
		return 1 // an undelivered result is no success
	}
	return a.code
}

// forwardable parses the netconf in stdin and says whether the call goes to the agent, and its
// budget: at most maxStdin bytes of JSON; an `ipam.agentSocket` that is absolute, without NUL,
// whose versioned path fits sun_path (107 bytes); `ipam.mode` absent or "agent";
// `ipam.timeoutMs` absent or an integer 100–600000. Keys match exactly, as core's do.
func forwardable(stdin []byte) (c netconf, _ time.Duration, _ bool) {
	var top, ipam map[string]json.RawMessage
	var mode *string // absent and null alike; "" is not "agent"
	s, ms := &c.IPAM.AgentSocket, defaultTimeoutMs
	if len(stdin) > maxStdin || json.Unmarshal(stdin, &top) != nil || json.Unmarshal(top["ipam"], &ipam) != nil ||
		!get(top, "cniVersion", &c.CNIVersion) || !get(top, "name", &c.Name) || !get(ipam, "agentSocket", s) ||
		!get(ipam, "mode", &mode) || !get(ipam, "logFile", &c.IPAM.LogFile) ||
		!get(ipam, "logLevel", &c.IPAM.LogLevel) || !get(ipam, "timeoutMs", &ms) || !strings.HasPrefix(*s, "/") ||
		strings.ContainsRune(*s, 0) || len(*s)+3 > 107 || (mode != nil && *mode != "agent") {
		return c, 0, false
	}
	return c, time.Duration(ms) * time.Millisecond, ms == float64(int(ms)) && ms >= 100 && ms <= 600_000
}

// get decodes obj[key], if present, into v (encoding/json's struct fields would also take "MODE").
func get(obj map[string]json.RawMessage, key string, v any) bool {
	return obj[key] == nil || json.Unmarshal(obj[key], v) == nil
}

// direct replaces this process with `blockipam-direct` in the forwarder's own directory (from
// /proc/self/exe), argv[0] "blockipam" (the multi-call executable's plugin role), the same
// environment with directEnv=reason. With stdin read (non-nil), fd 0 becomes a memfd holding
// it and the rest of the original stdin. Returns only when that fails: CNI 999 naming the path
// (in conf's cniVersion, logged as fail does).
func direct(conf netconf, stdin []byte, reason string) int {
	self, _ := os.Executable()
	path := filepath.Join(filepath.Dir(self), "blockipam-direct")
	err := error(nil)
	if stdin != nil {
		err = stdinFromMemory(stdin)
	}
	if err == nil {
		env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, directEnv+"=") })
		err = syscall.Exec(path, []string{"blockipam"}, append(env, directEnv+"="+reason))
	}
	return fail(conf, &cniError{999, "cannot run the direct path", fmt.Sprintf("%s: %v", path, err)})
}

// stdinFromMemory makes fd 0 a memfd holding data and whatever fd 0 still had, at offset 0.
func stdinFromMemory(data []byte) error {
	name := []byte("blockipam-stdin\x00")
	r, _, e := syscall.Syscall(sysMemfdCreate, uintptr(unsafe.Pointer(&name[0])), 0, 0)
	if e != 0 {
		return fmt.Errorf("memfd_create: %w", e)
	}
	mem := os.NewFile(r, "stdin")
	if _, err := io.Copy(mem, io.MultiReader(bytes.NewReader(data), io.LimitReader(os.Stdin, 64<<20))); err != nil {
		return err
	}
	if _, err := mem.Seek(0, 0); err != nil || r == 0 { // r 0: fd 0 was closed, the memfd took it
		return err
	}
	defer mem.Close()
	return syscall.Dup3(int(r), 0, 0)
}
