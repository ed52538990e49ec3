package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"
	"unsafe"
)

const (
	// ackBound: the wait for READY or NOT_SERVED, then ackBound at a time while the agent's heartbeat is
	// younger, up to half the budget; else the direct path (docs/design-plugin.md §Forwarder).
	ackBound = 2 * time.Second
	// statusBudget: STATUS's whole budget at the agent, then the direct path: never NotReady.
	statusBudget = 3 * time.Second
	maxOutput    = 1 << 20 // each of RESULT's stdout and stderr (an ADD result is under 1 KiB)
)

// answer is the agent's RESULT: the exit code, and what to write to fd 1 and fd 2.
type answer struct {
	code           int
	stdout, stderr []byte
}

// fallback is why the call goes to the direct path: the agent has not started it.
type fallback string

func (f fallback) Error() string { return string(f) }

// call hands the call to the agent at socket (core/node-ipam/wire.ts): the request; READY or
// NOT_SERVED within ackBound; GO; RESULT within timeout. Errors: fallback until GO is sent;
// after it *cniError (11: no answer in time or a close first; 999: malformed) — but fallback
// for STATUS (changes nothing) and for a DEL not answered (a release by handle is idempotent).
func call(socket string, stdin []byte, timeout time.Duration) (answer, error) {
	start := time.Now()
	deadlineNs := monotonicNs() + timeout.Nanoseconds()
	ackBy := start.Add(min(ackBound, timeout))
	conn, err := net.DialTimeout("unix", socket, time.Until(ackBy))
	if err != nil {
		return answer{}, fallback(err.Error())
	}
	defer conn.Close()
	_ = conn.SetDeadline(ackBy)
	if _, err := conn.Write(request(deadlineNs, stdin)); err != nil {
		return answer{}, fallback(err.Error())
	}
	kind := make([]byte, 1)
	_, err = io.ReadFull(conn, kind)
	for errors.Is(err, os.ErrDeadlineExceeded) && time.Since(start) < timeout/2 {
		if fi, e := os.Stat(socket); e != nil || time.Since(fi.ModTime()) >= ackBound {
			break // no heartbeat (the agent sets its socket's mtime every 200 ms while it runs)
		}
		_ = conn.SetDeadline(time.Now().Add(min(ackBound, time.Until(start.Add(timeout/2)))))
		_, err = io.ReadFull(conn, kind)
	}
	if err != nil {
		return answer{}, fallback(fmt.Sprintf("no READY within %v: %v", time.Since(start).Round(100*time.Millisecond), err))
	}
	if kind[0] == 'N' { // u32 n, then the reason up to the close
		reason, _ := io.ReadAll(io.LimitReader(conn, 4+4096))
		return answer{}, fallback("not served: " + string(reason[min(4, len(reason)):]))
	} else if kind[0] != 'A' {
		return answer{}, fallback(fmt.Sprintf("not a v3 agent (answered %q)", kind))
	}
	if _, err := conn.Write([]byte{'G'}); err != nil {
		return answer{}, fallback("GO: " + err.Error())
	}
	// Committed: the agent may run the call from here on.
	_ = conn.SetDeadline(start.Add(timeout))
	a, err := result(conn)
	var ce *cniError
	switch {
	case err == nil:
		return a, nil
	case os.Getenv("CNI_COMMAND") == "STATUS", os.Getenv("CNI_COMMAND") == "DEL" && !errors.As(err, &ce):
		return a, fallback(err.Error())
	case errors.As(err, &ce):
		return a, ce
	case errors.Is(err, os.ErrDeadlineExceeded):
		err = fmt.Errorf("none within ipam.timeoutMs (%v)", timeout)
	}
	return a, &cniError{11, "node agent: no answer", err.Error()}
}

// request frames the call: version 3, the deadline, the CNI_* variables that are set, stdin.
func request(deadlineNs int64, stdin []byte) []byte {
	var env []byte
	for _, name := range []string{"CNI_COMMAND", "CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME", "CNI_ARGS", "CNI_PATH"} {
		if v, ok := os.LookupEnv(name); ok {
			env = append(append(append(env, name+"="...), v...), 0)
		}
	}
	b := binary.BigEndian.AppendUint64([]byte{3}, uint64(deadlineNs))
	b = binary.BigEndian.AppendUint32(b, uint32(len(env)))
	b = binary.BigEndian.AppendUint32(b, uint32(len(stdin)))
	return append(append(b, env...), stdin...)
}

// result reads RESULT: 'R', the code, the two lengths, stdout and stderr.
func result(conn net.Conn) (answer, error) {
	head := make([]byte, 10)
	if _, err := io.ReadFull(conn, head); err != nil {
		return answer{}, err
	}
	o, r := binary.BigEndian.Uint32(head[2:]), binary.BigEndian.Uint32(head[6:])
	if head[0] != 'R' || o > maxOutput || r > maxOutput {
		return answer{}, &cniError{999, "node agent: malformed answer", fmt.Sprintf("header %q", head)}
	}
	body := make([]byte, o+r)
	if _, err := io.ReadFull(conn, body); err != nil {
		return answer{}, err
	}
	return answer{int(head[1]), body[:o], body[o:]}, nil
}

// monotonicNs is CLOCK_MONOTONIC in ns: the clock the agent reads with process.hrtime.bigint().
func monotonicNs() int64 {
	var ts syscall.Timespec
	_, _, _ = syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 1, uintptr(unsafe.Pointer(&ts)), 0)
	return ts.Nano()
}
