package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
	"unsafe"
)

const (
	// ackBound is how long the forwarder waits, from its start, for the agent's READY or
	// NOT_SERVED before it takes the direct path (docs/decisions.md: the agent's p99.9 ack under a
	// burst on a loaded node is far below it; a stalled agent costs each call this much).
	ackBound = 1500 * time.Millisecond
	// statusBudget is STATUS's whole budget at the agent: past it STATUS takes the direct path, so
	// a stalled agent never fails the runtime's poll and never turns its node NotReady.
	statusBudget = 2 * time.Second
	// maxOutput bounds each of an answer's stdout and stderr (an ADD result is under 1 KiB).
	maxOutput = 1 << 20
)

// answer is the agent's RESULT: the exit code and what to write to fd 1 and fd 2.
type answer struct {
	code           int
	stdout, stderr []byte
}

// fallback is a reason to take the direct path: the agent has not started the call.
type fallback string

func (f fallback) Error() string { return string(f) }

// call hands the call to the agent at socket (core/node-ipam/wire.ts): the request, READY or
// NOT_SERVED within ackBound, GO, RESULT within timeout. Errors: fallback until GO is sent;
// after it, *cniError (11: no answer in time, closed early; 999: malformed) — or, for STATUS,
// fallback again, since STATUS changes nothing.
func call(socket string, stdin []byte, timeout time.Duration) (answer, error) {
	start := time.Now()
	deadlineNs := monotonicNs() + timeout.Nanoseconds()
	ackBy := start.Add(min(ackBound, timeout))
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return answer{}, fallback("socket: " + err.Error())
	}
	defer syscall.Close(fd)
	setTimeout(fd, syscall.SO_SNDTIMEO, time.Until(ackBy))
	setTimeout(fd, syscall.SO_RCVTIMEO, time.Until(ackBy))
	if err := syscall.Connect(fd, &syscall.SockaddrUnix{Name: socket}); err != nil {
		return answer{}, fallback(fmt.Sprintf("connect %s: %v", socket, err))
	}
	if err := send(fd, request(deadlineNs, stdin)); err != nil {
		return answer{}, fallback("send: " + err.Error())
	}
	kind, err := receive(fd, 1)
	switch {
	case err != nil:
		return answer{}, fallback(fmt.Sprintf("no READY within %v: %v", ackBound, err))
	case kind[0] == 'N':
		n, err := receive(fd, 4)
		if err != nil {
			return answer{}, fallback("not served")
		}
		reason, _ := receive(fd, int(min(binary.BigEndian.Uint32(n), 4096)))
		return answer{}, fallback("not served: " + string(reason))
	case kind[0] != 'A':
		return answer{}, fallback(fmt.Sprintf("not a v3 agent (answered %q)", kind))
	}
	if err := send(fd, []byte{'G'}); err != nil {
		return answer{}, fallback("send GO: " + err.Error())
	}
	// Committed: the agent may run the call from here on; only STATUS may still fall back.
	setTimeout(fd, syscall.SO_RCVTIMEO, time.Until(start.Add(timeout)))
	a, err := result(fd)
	if err != nil && os.Getenv("CNI_COMMAND") == "STATUS" {
		return answer{}, fallback(err.Error())
	}
	if errors.Is(err, syscall.EAGAIN) {
		err = &cniError{11, "node agent: no answer in time", fmt.Sprintf("no answer within ipam.timeoutMs (%v)", timeout)}
	}
	return a, err
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
func result(fd int) (answer, error) {
	head, err := receive(fd, 10)
	if err != nil {
		return answer{}, err
	}
	o, r := binary.BigEndian.Uint32(head[2:]), binary.BigEndian.Uint32(head[6:])
	if head[0] != 'R' || o > maxOutput || r > maxOutput {
		return answer{}, &cniError{999, "node agent: malformed answer", fmt.Sprintf("header %q", head)}
	}
	body, err := receive(fd, int(o+r))
	if err != nil {
		return answer{}, err
	}
	return answer{int(head[1]), body[:o], body[o:]}, nil
}

// receive reads exactly n bytes. Errors: EAGAIN when SO_RCVTIMEO ran out, *cniError 11 when
// the agent closed the connection first, the read's own.
func receive(fd, n int) ([]byte, error) {
	b := make([]byte, n)
	for got := 0; got < n; {
		m, err := syscall.Read(fd, b[got:])
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return nil, err
		case m == 0:
			return nil, &cniError{11, "node agent: connection closed before the answer", "try again"}
		}
		got += m
	}
	return b, nil
}

// send writes all of b (MSG_NOSIGNAL: a gone agent is EPIPE, not a signal).
func send(fd int, b []byte) error {
	for len(b) > 0 {
		n, err := syscall.SendmsgN(fd, b, nil, nil, syscall.MSG_NOSIGNAL)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// setTimeout sets SO_SNDTIMEO or SO_RCVTIMEO to d, at least 1 µs (0 would mean forever).
func setTimeout(fd, opt int, d time.Duration) {
	tv := syscall.NsecToTimeval(max(d.Nanoseconds(), 1000))
	_ = syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, opt, &tv)
}

// monotonicNs is CLOCK_MONOTONIC in ns: the clock the agent reads with process.hrtime.bigint().
func monotonicNs() int64 {
	var ts syscall.Timespec
	_, _, _ = syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 1, uintptr(unsafe.Pointer(&ts)), 0)
	return ts.Nano()
}
