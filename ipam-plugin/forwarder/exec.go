package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unsafe"
)

// directName is the TypeScript executable's file name beside the forwarder (the node agent
// installs both: block-controller/agent/install/installer.ts).
const directName = "blockipam-direct"

// directEnv is the environment variable that tells the direct path the forwarder has applied the
// forwarding rule (core/cni/forward.ts DIRECT_ENV): it runs the call itself and never connects to
// the agent's socket. Its value is decided, or "<errno> <socket>" after a connect() that fell back.
const directEnv = "BLOCKIPAM_DIRECT"

// decided is directEnv's value for every call the rule sends to the direct path before connect().
const decided = "1"

// directArgv0 is the name the direct path runs under: the multi-call executable picks its role
// from basename(argv[0]) (cmd/role.ts), and "blockipam" is the plugin's.
const directArgv0 = "blockipam"

// direct replaces this process with the direct path: `blockipam-direct` in the forwarder's own
// directory (from /proc/self/exe, so a symlink to the forwarder does not move it), argv[0]
// "blockipam", the same environment with directEnv=reason (one such entry). stdin nil: fd 0 is left as it is (nothing was read from
// it); otherwise the bytes already read are handed over as a new fd 0, an anonymous memory file
// (memfd_create) at offset 0 — nothing is written to disk.
// Returns only when that fails: exitCniError with a CNI error (999) naming the path — except for
// VERSION, which answers itself when no direct path is there (answerVersion).
func direct(stdin []byte, reason string) int {
	self, err := os.Executable()
	if err != nil {
		return fail(versionOf(stdin), &cniError{999, "cannot run the direct path", fmt.Sprintf("cannot find this executable (/proc/self/exe): %v", err)})
	}
	path := filepath.Join(filepath.Dir(self), directName)
	if stdin != nil {
		if err := stdinFromMemory(stdin); err != nil {
			return fail(versionOf(stdin), &cniError{999, "cannot run the direct path", fmt.Sprintf("cannot hand stdin to %s: %v", path, err)})
		}
	}
	env := []string{directEnv + "=" + reason}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, directEnv+"=") {
			env = append(env, kv)
		}
	}
	err = syscall.Exec(path, []string{directArgv0}, env)
	if os.Getenv("CNI_COMMAND") == "VERSION" && err == syscall.ENOENT {
		return answerVersion()
	}
	return fail(versionOf(stdin), &cniError{999, "cannot run the direct path", fmt.Sprintf("%s: %v (the TypeScript executable the node agent installs beside the forwarder %s)", path, err, self)})
}

// versionOf is the netconf's cniVersion for an error document (defaultCniVersion when stdin is
// unread, not JSON or names none).
func versionOf(stdin []byte) string {
	conf, _ := parseNetconf(stdin)
	return conf.cniVersion
}

// stdinFromMemory makes fd 0 a memory file holding data, positioned at its start.
func stdinFromMemory(data []byte) error {
	name := []byte("blockipam-stdin\x00")
	const mfdCloexec = 1 // MFD_CLOEXEC: the copy at fd 0 (dup3 clears it) is the one exec keeps
	r, _, e := syscall.Syscall(sysMemfdCreate, uintptr(unsafe.Pointer(&name[0])), mfdCloexec, 0)
	if e != 0 {
		return fmt.Errorf("memfd_create: %w", e)
	}
	fd := int(r)
	if err := writeAll(fd, string(data)); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	if _, err := syscall.Seek(fd, 0, 0); err != nil {
		return fmt.Errorf("lseek: %w", err)
	}
	if fd == 0 {
		// fd 0 was closed when the forwarder started: the memory file took it; keep it across exec
		_, _, e := syscall.Syscall(syscall.SYS_FCNTL, 0, syscall.F_SETFD, 0)
		if e != 0 {
			return fmt.Errorf("fcntl: %w", e)
		}
		return nil
	}
	if err := syscall.Dup3(fd, 0, 0); err != nil {
		return fmt.Errorf("dup3: %w", err)
	}
	return nil
}
