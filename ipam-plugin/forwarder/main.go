// Command blockipam-forwarder is the CNI IPAM plugin `blockipam` the container runtime calls
// when the node agent serves IPAM (docs/design-plugin.md §Forwarder). It hands ADD, DEL, CHECK,
// GC and STATUS to the agent over its socket (node IPAM wire v3, agent.go) and execs the
// TypeScript executable `blockipam-direct` beside it — the direct path — for every call the
// agent did not start: it decides nothing about IPAM and validates nothing the direct path or the
// agent validate.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

const (
	maxStdin       = 1 << 20          // the agent's bound (wire.ts MAX_STDIN_BYTES); the direct path reads 64 MiB
	maxSocketPath  = 107              // sun_path without its NUL (unix(7))
	defaultTimeout = 30 * time.Second // `ipam.timeoutMs` when unset (core/cni/forward.ts)
	directEnv      = "BLOCKIPAM_DIRECT"
)

// forwarded are the commands the agent serves; anything else (VERSION) is the direct path's.
var forwarded = map[string]bool{"ADD": true, "DEL": true, "CHECK": true, "GC": true, "STATUS": true}

// netconf holds the fields the forwarder reads; the agent and the direct path validate the rest.
type netconf struct {
	CNIVersion string `json:"cniVersion"`
	Name       string `json:"name"`
	IPAM       struct {
		AgentSocket string   `json:"agentSocket"`
		Mode        string   `json:"mode"`
		TimeoutMs   *float64 `json:"timeoutMs"`
		LogFile     string   `json:"logFile"`
		LogLevel    string   `json:"logLevel"`
	} `json:"ipam"`
}

func main() { os.Exit(run()) }

// run returns the exit code, or replaces the process with the direct path.
func run() int {
	started := time.Now()
	if !forwarded[os.Getenv("CNI_COMMAND")] {
		return direct(nil, "1")
	}
	stdin, err := io.ReadAll(io.LimitReader(os.Stdin, maxStdin+1))
	if err != nil || len(stdin) > maxStdin {
		return direct(stdin, "1") // the direct path reads the rest, or reports the error itself
	}
	var conf netconf
	if json.Unmarshal(stdin, &conf) != nil {
		return direct(stdin, "1")
	}
	timeout, ok := forwardable(conf)
	if !ok {
		return direct(stdin, "1")
	}
	if os.Getenv("CNI_COMMAND") == "STATUS" {
		timeout = min(timeout, statusBudget)
	}
	a, err := call(conf.IPAM.AgentSocket+".v3", stdin, timeout)
	if err != nil {
		if fb, ok := err.(fallback); ok {
			return direct(stdin, string(fb))
		}
		return failed(conf, err.(*cniError), started)
	}
	logCall(conf, a.stderr, a.code, started)
	return deliver(a)
}

// forwardable says whether the netconf sends the call to the agent, and with which budget: an
// `ipam.agentSocket` a socket path may be (absolute, no NUL, the versioned path within
// sun_path), `ipam.mode` absent or "agent", `ipam.timeoutMs` absent or an integer 100–600000.
func forwardable(c netconf) (time.Duration, bool) {
	s, t := c.IPAM.AgentSocket, c.IPAM.TimeoutMs
	if !strings.HasPrefix(s, "/") || strings.ContainsRune(s, 0) || len(s)+3 > maxSocketPath {
		return 0, false
	}
	if c.IPAM.Mode != "" && c.IPAM.Mode != "agent" {
		return 0, false
	}
	if t == nil {
		return defaultTimeout, true
	}
	if *t != float64(int(*t)) || *t < 100 || *t > 600_000 {
		return 0, false
	}
	return time.Duration(*t) * time.Millisecond, true
}

// direct replaces this process with `blockipam-direct` in the forwarder's own directory (from
// /proc/self/exe), argv[0] "blockipam" (the multi-call executable's plugin role), the same
// environment with directEnv=reason. stdin nil leaves fd 0 as it is; otherwise fd 0 becomes a
// memory file holding the bytes read and then the rest of the original stdin. Returns only
// when that fails: CNI 999 naming the path, or VERSION answered here.
func direct(stdin []byte, reason string) int {
	self, _ := os.Executable()
	path := filepath.Join(filepath.Dir(self), "blockipam-direct")
	if stdin != nil {
		if err := stdinFromMemory(stdin); err != nil {
			return fail("1.1.0", &cniError{999, "cannot run the direct path", err.Error()})
		}
	}
	env := []string{directEnv + "=" + reason}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, directEnv+"=") {
			env = append(env, kv)
		}
	}
	err := syscall.Exec(path, []string{"blockipam"}, env)
	if os.Getenv("CNI_COMMAND") == "VERSION" {
		return answerVersion()
	}
	return fail("1.1.0", &cniError{999, "cannot run the direct path", fmt.Sprintf("%s: %v", path, err)})
}

// stdinFromMemory makes fd 0 a memfd holding data and whatever fd 0 still had, at offset 0.
func stdinFromMemory(data []byte) error {
	name := []byte("blockipam-stdin\x00")
	r, _, e := syscall.Syscall(sysMemfdCreate, uintptr(unsafe.Pointer(&name[0])), 1 /* MFD_CLOEXEC */, 0)
	if e != 0 {
		return fmt.Errorf("memfd_create: %w", e)
	}
	mem := os.NewFile(r, "stdin")
	if _, err := mem.Write(data); err != nil {
		return err
	}
	if _, err := io.Copy(mem, io.LimitReader(os.Stdin, 64<<20)); err != nil {
		return err
	}
	if _, err := mem.Seek(0, 0); err != nil {
		return err
	}
	if r == 0 { // fd 0 was closed: the memfd took it; keep it across exec
		_, _, e = syscall.Syscall(syscall.SYS_FCNTL, 0, syscall.F_SETFD, 0)
		return e
	}
	return syscall.Dup3(int(r), 0, 0)
}

// answerVersion answers VERSION as core/cni/commands/version.ts does when no direct path is
// installed: the supported versions, and stdin's cniVersion when it is one of them.
func answerVersion() int {
	versions := []string{"0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"}
	var conf netconf
	stdin, _ := io.ReadAll(io.LimitReader(os.Stdin, maxStdin))
	if json.Unmarshal(stdin, &conf) != nil || !slices.Contains(versions, conf.CNIVersion) {
		conf.CNIVersion = "1.1.0"
	}
	fmt.Printf(`{"cniVersion":%q,"supportedVersions":["%s"]}`+"\n", conf.CNIVersion, strings.Join(versions, `","`))
	return 0
}
