package main

import (
	"cmp"
	"encoding/json"
	"os"
	"time"
)

// cniError is a failure of the forwarder's own, reported as a CNI error document.
type cniError struct {
	code         int
	msg, details string
}

func (e *cniError) Error() string { return e.msg + ": " + e.details }

// fail writes e as a CNI error document in conf's cniVersion (default 1.1.0) and returns 1; it
// logs e too (stderr, and logFile when set).
func fail(conf netconf, e *cniError) int {
	line := logLine(conf, "error", e.msg, map[string]any{"code": e.code, "details": e.details})
	_, _ = os.Stderr.Write(line)
	logCall(conf, line, 1)
	doc, _ := json.Marshal(map[string]any{"cniVersion": cmp.Or(conf.CNIVersion, "1.1.0"), "code": e.code, "msg": e.msg,
		"details": e.details})
	_, _ = os.Stdout.Write(append(doc, '\n'))
	return 1
}

// logCall appends `lines` and, at logLevel info or debug, a `done` line to `ipam.logFile` (0600), if set.
func logCall(conf netconf, lines []byte, code int) {
	if l := conf.IPAM.LogLevel; conf.IPAM.LogFile != "" && (l == "" || l == "info" || l == "debug") {
		ms := time.Since(started).Milliseconds()
		lines = append(lines, logLine(conf, "info", "done", map[string]any{"code": code, "durationMs": ms})...)
	}
	if f, err := os.OpenFile(conf.IPAM.LogFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err == nil {
		_, _ = f.Write(lines)
		_ = f.Close()
	}
}

// logLine is one JSON log line of this call, as the direct path's logger writes them.
func logLine(conf netconf, level, msg string, fields map[string]any) []byte {
	rec := map[string]any{"time": time.Now().UTC().Format("2006-01-02T15:04:05.000Z"), "level": level,
		"msg": msg, "pid": os.Getpid(), "cmd": os.Getenv("CNI_COMMAND"), "network": conf.Name,
		"containerID": os.Getenv("CNI_CONTAINERID"), "ifname": os.Getenv("CNI_IFNAME"), "path": "agent"}
	for k, v := range fields {
		rec[k] = v
	}
	line, _ := json.Marshal(rec)
	return append(line, '\n')
}
