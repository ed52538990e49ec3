package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"syscall"
	"time"
	"unicode/utf8"
)

// protocolVersion is the node IPAM protocol version of the raw CNI call wire (`v`).
const protocolVersion = 2

// maxAnswerBytes bounds the agent's answer line (bytes), as MAX_RESPONSE_BYTES of the TypeScript
// thin client.
const maxAnswerBytes = 1 << 20

// maxRequestBytes bounds the request line (bytes): the agent refuses a longer one
// (MAX_REQUEST_BYTES of core's protocol module).
const maxRequestBytes = 1 << 20

// cniEnv lists the environment variables the request carries, when set (CNI spec §"Parameters").
var cniEnv = []string{"CNI_COMMAND", "CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME", "CNI_ARGS", "CNI_PATH"}

// fallbackError says connect() failed such that the agent never saw the call: the direct path
// serves it (told errno and socket through directEnv, and logs them).
type fallbackError struct {
	errno string
}

func (e *fallbackError) Error() string { return "connect failed: " + e.errno + ": direct path" }

// fallbackErrnos are the connect() errors that send the call to the direct path (the agent has
// not seen the request; the TypeScript thin client's FALLBACK_ERRNOS, with their reasons there):
// no socket file, a path component that is a file, a socket nobody listens on, a path that is
// not a socket, and no permission to connect. Any other connect() failure is CNI 11.
var fallbackErrnos = map[syscall.Errno]string{
	syscall.ENOENT:       "ENOENT",
	syscall.ENOTDIR:      "ENOTDIR",
	syscall.ECONNREFUSED: "ECONNREFUSED",
	syscall.ENOTSOCK:     "ENOTSOCK",
	syscall.EACCES:       "EACCES",
	syscall.EPERM:        "EPERM",
}

// otherErrnoNames names the other errors connect(2) reports, for the details of CNI 11.
var otherErrnoNames = map[syscall.Errno]string{
	syscall.EAGAIN:       "EAGAIN",
	syscall.EINVAL:       "EINVAL",
	syscall.ENAMETOOLONG: "ENAMETOOLONG",
	syscall.ELOOP:        "ELOOP",
	syscall.ECONNRESET:   "ECONNRESET",
	syscall.EMFILE:       "EMFILE",
	syscall.ENFILE:       "ENFILE",
	syscall.ENOMEM:       "ENOMEM",
	syscall.ENOBUFS:      "ENOBUFS",
}

// answer is the agent's v2 answer: what the plugin process itself would have written and returned.
type answer struct {
	code   int
	stdout string
	stderr string
}

// forward sends line (requestLine) to the agent at conf.agentSocket and returns its answer. The
// whole call (connect, send, answer) has conf.timeout.
// Errors: *fallbackError when connect() fails with one of fallbackErrnos; *cniError 11 for any
// other connect() failure, no connection within the budget, no complete answer within it, or a
// connection closed or reset before a complete answer; 999 for an answer that is not the v2
// shape or over maxAnswerBytes. Nothing after the request was written falls back.
func forward(conf netconf, line []byte) (answer, error) {
	deadline := time.Now().Add(conf.timeout)
	fd, err := connect(conf, deadline)
	if err != nil {
		return answer{}, err
	}
	defer syscall.Close(fd)
	if err := send(fd, line, deadline); err != nil {
		return answer{}, afterSend(conf, "node agent connection failed", fmt.Sprintf("%v after the request was sent", err))
	}
	text, err := receive(conf, fd, deadline)
	if err != nil {
		return answer{}, err
	}
	return parseAnswer(text)
}

// requestLine is the v2 request {"v":2,"env":{…},"stdin":"…"} for this process's CNI_* variables
// (those set, in cniEnv's order) and stdin, with its newline: byte for byte what the TypeScript
// client sends, JSON.stringify(callRequest(env, stdin)) (core/cni/forward.ts requestBytes), so
// both clients measure a request alike against maxRequestBytes. Bytes that are not UTF-8 are
// decoded as Buffer.toString does (appendJSString).
func requestLine(stdin []byte) []byte {
	line := make([]byte, 0, len(stdin)+len(stdin)/8+512)
	line = append(line, `{"v":2,"env":{`...)
	first := true
	for _, k := range cniEnv {
		v, set := os.LookupEnv(k)
		if !set {
			continue
		}
		if !first {
			line = append(line, ',')
		}
		first = false
		line = appendJSString(line, []byte(k))
		line = append(line, ':')
		line = appendJSString(line, []byte(v))
	}
	line = append(line, `},"stdin":`...)
	line = appendJSString(line, stdin)
	return append(line, '}', '\n')
}

// appendJSString appends s as JSON.stringify writes the string Buffer.toString("utf8") makes of
// s: '"' and '\\' escaped, \b \f \n \r \t by name, other controls below 0x20 as \u00xx
// (lowercase), everything else as is; each maximal ill-formed subsequence (WHATWG UTF-8 decode)
// becomes one U+FFFD.
func appendJSString(buf, s []byte) []byte {
	const hex = "0123456789abcdef"
	buf = append(buf, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x80 {
			r, size := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && size <= 1 {
				buf = utf8.AppendRune(buf, utf8.RuneError)
				i += illFormedLen(s[i:])
				continue
			}
			buf = append(buf, s[i:i+size]...)
			i += size
			continue
		}
		switch {
		case c == '"' || c == '\\':
			buf = append(buf, '\\', c)
		case c == '\b':
			buf = append(buf, '\\', 'b')
		case c == '\f':
			buf = append(buf, '\\', 'f')
		case c == '\n':
			buf = append(buf, '\\', 'n')
		case c == '\r':
			buf = append(buf, '\\', 'r')
		case c == '\t':
			buf = append(buf, '\\', 't')
		case c < 0x20:
			buf = append(buf, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			buf = append(buf, c)
		}
		i++
	}
	return append(buf, '"')
}

// illFormedLen is the length of the maximal ill-formed subsequence at the start of s (s[0] does
// not start a valid UTF-8 sequence): a lead byte followed by those continuation bytes that could
// still have completed it (Unicode §3.9 "U+FFFD substitution of maximal subparts", as WHATWG's
// UTF-8 decoder and so Buffer.toString); at least 1.
func illFormedLen(s []byte) int {
	lo, hi := byte(0x80), byte(0xbf)
	need := 0
	switch c := s[0]; {
	case c >= 0xc2 && c <= 0xdf:
		need = 1
	case c >= 0xe0 && c <= 0xef:
		need = 2
		if c == 0xe0 {
			lo = 0xa0
		} else if c == 0xed {
			hi = 0x9f
		}
	case c >= 0xf0 && c <= 0xf4:
		need = 3
		if c == 0xf0 {
			lo = 0x90
		} else if c == 0xf4 {
			hi = 0x8f
		}
	default:
		return 1
	}
	n := 1
	for ; n <= need && n < len(s); n++ {
		if s[n] < lo || s[n] > hi {
			break
		}
		lo, hi = 0x80, 0xbf
	}
	return n
}

// marshal is v as one JSON line (with its newline), '<', '>' and '&' not escaped (as JSON.stringify).
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// connect opens a connection to the agent's socket, waiting at most until deadline for room in
// its accept queue (a blocking connect(2) under SO_SNDTIMEO).
// Errors: errFallback (fallbackErrnos); *cniError 11 otherwise.
func connect(conf netconf, deadline time.Time) (int, error) {
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, connectError(conf, err)
	}
	for {
		left := time.Until(deadline)
		if left <= 0 {
			syscall.Close(fd)
			return -1, &cniError{11, "node agent did not accept the connection", fmt.Sprintf("%s: no connection within %d ms (ipam.timeoutMs)", conf.agentSocket, conf.timeout.Milliseconds())}
		}
		if err := setTimeout(fd, syscall.SO_SNDTIMEO, left); err != nil {
			syscall.Close(fd)
			return -1, connectError(conf, err)
		}
		err = syscall.Connect(fd, &syscall.SockaddrUnix{Name: conf.agentSocket})
		if err == nil {
			return fd, nil
		}
		if err == syscall.EINTR || err == syscall.EAGAIN {
			continue // EAGAIN: the accept queue stayed full; the deadline check above reports it
		}
		syscall.Close(fd)
		return -1, connectError(conf, err)
	}
}

// connectError is *fallbackError for fallbackErrnos, else CNI 11 naming the errno.
func connectError(conf netconf, err error) error {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		if name, ok := fallbackErrnos[errno]; ok {
			return &fallbackError{name}
		}
	}
	name, ok := otherErrnoNames[errno]
	if !ok {
		name = fmt.Sprintf("errno %d", int(errno))
	}
	return &cniError{11, "node agent socket busy or unusable", fmt.Sprintf("%s: %s: %v", conf.agentSocket, name, err)}
}

// send writes all of line to fd before deadline (MSG_NOSIGNAL: a closed peer is EPIPE, not a signal).
func send(fd int, line []byte, deadline time.Time) error {
	for len(line) > 0 {
		left := time.Until(deadline)
		if left <= 0 {
			return errors.New("no room to write the request in time")
		}
		if err := setTimeout(fd, syscall.SO_SNDTIMEO, left); err != nil {
			return err
		}
		n, err := syscall.SendmsgN(fd, line, nil, nil, syscall.MSG_NOSIGNAL)
		if err == syscall.EINTR || err == syscall.EAGAIN {
			line = line[max(n, 0):]
			continue
		}
		if err != nil {
			return err
		}
		line = line[n:]
	}
	return nil
}

// receive reads the answer line from fd, up to its newline (the agent ends every answer with one).
// Errors: *cniError 11 when nothing complete arrives before deadline, or the connection is
// closed or reset before the newline (a truncated answer: the agent may have gone mid-write, so
// try again later, not "malformed"); 999 past maxAnswerBytes without a newline.
func receive(conf netconf, fd int, deadline time.Time) ([]byte, error) {
	buf := make([]byte, 0, 4096)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return nil, afterSend(conf, "node agent did not answer in time", fmt.Sprintf("no answer within %d ms of the call (ipam.timeoutMs) after the request was sent", conf.timeout.Milliseconds()))
		}
		if err := setTimeout(fd, syscall.SO_RCVTIMEO, left); err != nil {
			return nil, afterSend(conf, "node agent connection failed", fmt.Sprintf("%v after the request was sent", err))
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := syscall.Read(fd, buf[len(buf):cap(buf)])
		switch {
		case err == syscall.EINTR || err == syscall.EAGAIN:
			continue // EAGAIN: SO_RCVTIMEO expired; the deadline check above reports it
		case err != nil && len(buf) > 0:
			return nil, truncated(conf, len(buf), err.Error())
		case err != nil:
			return nil, afterSend(conf, "node agent connection failed", fmt.Sprintf("%v after the request was sent", err))
		case n == 0 && len(buf) > 0:
			return nil, truncated(conf, len(buf), "connection closed")
		case n == 0:
			return nil, afterSend(conf, "node agent closed the connection without an answer", "connection closed after the request")
		}
		nl := bytes.IndexByte(buf[len(buf):len(buf)+n], '\n')
		if nl >= 0 {
			buf = buf[:len(buf)+nl]
		} else {
			buf = buf[:len(buf)+n]
		}
		if len(buf) > maxAnswerBytes {
			return nil, &cniError{999, "node agent answer malformed", fmt.Sprintf("more than %d bytes without a newline", maxAnswerBytes)}
		}
		if nl >= 0 {
			return buf, nil
		}
	}
}

// truncated is CNI 11 for an answer cut off: n bytes arrived, then how (closed, reset), no newline.
func truncated(conf netconf, n int, how string) *cniError {
	return afterSend(conf, "node agent answer incomplete", fmt.Sprintf("%s after %d bytes of the answer, before its newline", how, n))
}

// afterSend is CNI 11 for a failure after the request was written (the agent may have served it).
func afterSend(conf netconf, msg, details string) *cniError {
	return &cniError{11, msg, fmt.Sprintf("%s: %s; not retried on the direct path", conf.agentSocket, details)}
}

// parseAnswer decodes the v2 answer {"v":2,"code":N,"stdout":"…","stderr":"…"}; fields it does
// not know are ignored. The problems are worded as core's parseCallResponse words them
// (core/node-ipam/protocol.ts), so both clients report a bad answer alike.
// Errors: *cniError 999 "node agent answer malformed" naming the problem.
func parseAnswer(text []byte) (answer, error) {
	malformed := func(problem string) (answer, error) {
		return answer{}, &cniError{999, "node agent answer malformed", problem}
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(text, &doc); err != nil {
		var v any
		if json.Unmarshal(text, &v) == nil {
			return malformed("response: not a JSON object")
		}
		return malformed("not JSON: " + err.Error())
	}
	if doc == nil {
		return malformed("response: not a JSON object")
	}
	if v, ok := number(doc["v"]); !ok || v != protocolVersion {
		return malformed(fmt.Sprintf("response: protocol version %s, this plugin speaks %d (plugin and agent of different releases?)", quote(doc["v"]), protocolVersion))
	}
	code, ok := number(doc["code"])
	if !ok || code != math.Trunc(code) || code < 0 || code > 255 {
		return malformed(fmt.Sprintf("response.code: %s is not an integer 0–255", quote(doc["code"])))
	}
	a := answer{code: int(code)}
	if !stringField(doc, "stdout", &a.stdout) {
		return malformed("response.stdout: not a string")
	}
	if !stringField(doc, "stderr", &a.stderr) {
		return malformed("response.stderr: not a string")
	}
	return a, nil
}

// number is raw as a JSON number; false when absent or another type.
func number(raw json.RawMessage) (float64, bool) {
	var f float64
	if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) || json.Unmarshal(raw, &f) != nil {
		return 0, false
	}
	return f, true
}

// quoteMax bounds a value quoted in a problem (characters, as core's protocol module).
const quoteMax = 64

// quote shows a field's value in a problem as core's protocol module does: "nothing" when
// absent, "an array", "an object", else its JSON (at most quoteMax bytes, then "…").
func quote(raw json.RawMessage) string {
	switch {
	case len(raw) == 0:
		return "nothing"
	case raw[0] == '[':
		return "an array"
	case raw[0] == '{':
		return "an object"
	case len(raw) > quoteMax:
		return string(raw[:quoteMax]) + "…"
	}
	return string(raw)
}

// setTimeout sets a socket timeout option (SO_SNDTIMEO, SO_RCVTIMEO) to d, at least 1 µs (0
// would mean "wait forever").
func setTimeout(fd, opt int, d time.Duration) error {
	tv := syscall.NsecToTimeval(max(d.Nanoseconds(), 1000))
	return syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, opt, &tv)
}

// deliver writes the agent's answer to fd 1 and fd 2 and returns its exit code; a stdout that
// cannot take it (reader gone, ENOSPC) makes it 1 — an undelivered result is no success.
func deliver(a answer) int {
	if err := writeAll(1, a.stdout); err != nil {
		_ = writeAll(2, a.stderr)
		return exitCniError
	}
	_ = writeAll(2, a.stderr) // logs only: nowhere left to report a failure
	return a.code
}

// fail prints err as a CNI error document with cniVersion on stdout and returns exitCniError.
func fail(cniVersion string, err error) int {
	var ce *cniError
	if !errors.As(err, &ce) {
		ce = &cniError{999, "internal error", err.Error()}
	}
	doc := struct {
		CNIVersion string `json:"cniVersion"`
		Code       int    `json:"code"`
		Msg        string `json:"msg"`
		Details    string `json:"details,omitempty"`
	}{cniVersion, ce.code, ce.msg, ce.details}
	line, _ := marshal(doc)
	_ = writeAll(1, string(line))
	return exitCniError
}

// writeAll writes all of text to fd, waiting out EAGAIN on a non-blocking pipe.
// Errors: the write's (EPIPE: the reader has gone; ENOSPC, EBADF).
func writeAll(fd int, text string) error {
	b := []byte(text)
	for len(b) > 0 {
		n, err := syscall.Write(fd, b)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			waitWritable(fd)
			continue
		case err != nil:
			return err
		}
		b = b[n:]
	}
	return nil
}
