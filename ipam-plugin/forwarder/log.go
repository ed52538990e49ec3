package main

import (
	"errors"
	"os"
	"syscall"
	"time"
)

// logRecord is one JSON line of the plugin's log file, in the shape the TypeScript executable
// writes for a forwarded call (ipam-plugin/call.ts logLine): the same keys in the same order.
type logRecord struct {
	Time        string `json:"time"`
	Level       string `json:"level"`
	Msg         string `json:"msg"`
	Pid         int    `json:"pid"`
	Cmd         string `json:"cmd"`
	Network     string `json:"network,omitempty"`
	ContainerID string `json:"containerID"`
	Ifname      string `json:"ifname"`
	Path        string `json:"path"`
	Code        int    `json:"code"`
	Details     string `json:"details,omitempty"`
	DurationMs  *int64 `json:"durationMs,omitempty"`
}

// logLine renders one log line of this call in network (the netconf's `name`; omitted when
// empty): level, msg, code, and details and durationMs when set.
func logLine(network, level, msg string, code int, details string, durationMs *int64) string {
	line, _ := marshal(logRecord{
		Time:        time.Now().UTC().Format("2006-01-02T15:04:05.000Z07:00"),
		Level:       level,
		Msg:         msg,
		Pid:         os.Getpid(),
		Cmd:         os.Getenv("CNI_COMMAND"),
		Network:     network,
		ContainerID: os.Getenv("CNI_CONTAINERID"),
		Ifname:      os.Getenv("CNI_IFNAME"),
		Path:        "agent",
		Code:        code,
		Details:     details,
		DurationMs:  durationMs,
	})
	return string(line)
}

// logForwarded appends a forwarded call's lines to the netconf's `ipam.logFile` when it names
// one, as the TypeScript executable does (call.ts logForwarded): `lines` (the agent's stderr —
// warn and above — or the forwarder's own error line) and, at `ipam.logLevel` info or debug (the
// default), a `done` line with the exit code and the wall time since started. A log file that
// cannot be written is skipped: logging never fails a call. The file is created 0600.
func logForwarded(conf netconf, lines string, code int, started time.Time) {
	if conf.logFile == "" {
		return
	}
	text := lines
	if conf.logLevel == "" || conf.logLevel == "info" || conf.logLevel == "debug" {
		ms := time.Since(started).Milliseconds()
		text += logLine(conf.network, "info", "done", code, "", &ms)
	}
	if text == "" {
		return
	}
	fd, err := syscall.Open(conf.logFile, syscall.O_WRONLY|syscall.O_APPEND|syscall.O_CREAT|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return
	}
	_ = writeAll(fd, text)
	_ = syscall.Close(fd)
}

// failForwarded reports a client-side failure of a forwarded call as the TypeScript executable
// does: an error line on stderr and in the log file (with a done line), then the CNI error
// document on stdout. Returns exitCniError.
func failForwarded(conf netconf, err error, started time.Time) int {
	var ce *cniError
	if !errors.As(err, &ce) {
		ce = &cniError{999, "internal error", err.Error()}
	}
	line := logLine(conf.network, "error", ce.msg, ce.code, ce.details, nil)
	_ = writeAll(2, line)
	logForwarded(conf, line, exitCniError, started)
	return fail(conf.cniVersion, ce)
}
