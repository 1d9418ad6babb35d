package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync/atomic"
	"syscall"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"
)

// stdioTransport runs a stdio server as the SDK's CommandTransport does
// (newline-delimited JSON on its stdin and stdout; closing stops it:
// stdin closed, then SIGTERM, then SIGKILL), except that lines of its
// stdout that are not JSON between messages (a start banner, a stray
// debug print) are skipped and logged, as the other SDKs' clients skip
// them, instead of ending the session.
type stdioTransport struct {
	cmd    *exec.Cmd
	log    *zap.Logger
	maxMsg int
	// proc is the started server (nil before Connect).
	proc *stdioProcess
	// started is told the server's pid once it runs (groupRegistry.add).
	started func(pid int)
}

// stdioTerminate is how long closing waits for the server to exit after
// closing its stdin, and again after SIGTERM, before SIGKILL.
const stdioTerminate = 5 * time.Second

func (t *stdioTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	stdout, err := t.cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("stdout: %w", err)
	}
	stdin, err := t.cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("stdin: %w", err)
	}
	if err := t.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start: %w", err)
	}
	if t.started != nil {
		t.started(t.cmd.Process.Pid)
	}
	p := &stdioProcess{cmd: t.cmd, connect: ctx}
	p.stdin = newInputQueue(stdin, t.maxMsg, func() { _ = t.cmd.Process.Kill() })
	t.proc = p
	// jsonLines caps each message (with errMessageTooLarge, not the SDK's).
	tr := &sdk.IOTransport{Reader: &jsonLines{r: bufio.NewReaderSize(stdout, 64<<10), log: t.log, max: t.maxMsg}, Writer: p, MaxLineLength: -1}
	return tr.Connect(ctx)
}

// stdioProcess is the server's stdin; closing it stops the server.
type stdioProcess struct {
	cmd   *exec.Cmd
	stdin *inputQueue // at most maxMsg bytes unread
	// connect is the context of the connection attempt that started it;
	// ready is set once the attempt succeeded (handshake and tool list).
	connect context.Context
	ready   atomic.Bool
}

func (p *stdioProcess) Write(b []byte) (int, error) { return p.stdin.Write(b) }

// Close closes stdin and waits for the server to exit: after
// stdioTerminate it gets SIGTERM, after as long again SIGKILL. A server
// whose connection attempt ran out of time (the connect timeout, or the
// manager stopping) before it was ready gets no such grace — it is hung
// or not there yet, and the attempt, which turns may be waiting for,
// ends now: SIGTERM at once, SIGKILL after groupGrace.
func (p *stdioProcess) Close() error {
	if err := p.stdin.Close(); err != nil {
		return fmt.Errorf("closing stdin: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- p.cmd.Wait() }()
	wait := func(d time.Duration) (error, bool) {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case err := <-exited:
			return err, true
		case <-t.C:
			return nil, false
		}
	}
	grace := stdioTerminate
	if hurried := !p.ready.Load() && p.connect.Err() != nil; hurried {
		grace = groupGrace
	} else if err, ok := wait(grace); ok {
		return err
	}
	if p.cmd.Process.Signal(syscall.SIGTERM) == nil {
		if err, ok := wait(grace); ok {
			return err
		}
	}
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill: %w", err)
	}
	if err, ok := wait(stdioTerminate); ok {
		return err
	}
	return errors.New("the server process does not exit")
}

// jsonLines passes a server's stdout through, but for the lines that begin
// outside any JSON value and are no message: those are dropped and logged,
// as the other SDKs' clients skip them, where the SDK's reader would end
// the connection on them. A message is an object, or an array of them, so
// a line that does not open one — text, "[INFO] started" (a '[' that no
// '{' follows), "{not json}" — is dropped; and a line that holds a whole
// value is passed only when it is valid JSON naming "jsonrpc" (a JSON log
// line such as {"level":30,"msg":"listening"} is dropped). It follows
// strings and nesting so a message spread over several lines, or longer
// than the read buffer, passes whole (unchecked). A message over max
// bytes fails the read with errMessageTooLarge (the connection ends)
// before it is held whole.
type jsonLines struct {
	r   *bufio.Reader
	log *zap.Logger
	max int // bytes of one message passed at most

	pending []byte // passed bytes not yet returned
	inLine  bool   // the last chunk did not end its line
	drop    bool   // the current line is being dropped
	depth   int    // nesting of the JSON value being passed
	inStr   bool   // inside a string of it
	escape  bool   // after a backslash in that string
	dropped []byte // the start of the line being dropped, for the log
	size    int    // bytes passed of the current message
	err     error  // errMessageTooLarge (wrapped) once a message went over max
}

// maxDroppedLog is how much of a dropped line is logged.
const maxDroppedLog = 200

func (j *jsonLines) Read(p []byte) (int, error) {
	for len(j.pending) == 0 {
		if j.err != nil {
			return 0, j.err
		}
		chunk, err := j.r.ReadSlice('\n')
		if len(chunk) > 0 {
			j.take(chunk)
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			if len(j.pending) > 0 {
				break
			}
			return 0, err
		}
	}
	n := copy(p, j.pending)
	j.pending = j.pending[n:]
	return n, nil
}

// take decides about chunk, a piece of a line (ending with its newline,
// if it is the line's last), and queues what passes.
func (j *jsonLines) take(chunk []byte) {
	// A line that starts between messages: a message, blank, or noise.
	start := !j.inLine && j.depth == 0
	if start {
		j.drop = !opensMessage(chunk)
	}
	j.inLine = chunk[len(chunk)-1] != '\n'
	if j.drop {
		j.noise(chunk)
		return
	}
	j.scan(chunk)
	if start && !j.inLine && j.depth == 0 && !blank(chunk) && !isMessage(chunk) {
		// The whole line is one value (or several, or text after one)
		// and no message: noise that looked like JSON.
		j.inStr, j.escape = false, false
		j.noise(chunk)
		return
	}
	j.size += len(chunk)
	if j.size > j.max {
		j.err, j.pending = tooLarge(j.max), nil
		return
	}
	j.pending = append(j.pending, chunk...)
	if j.depth == 0 && !j.inLine {
		j.size = 0 // the message ended with its line
	}
}

// noise drops chunk, a piece of a line that is no message, and logs the
// line's start once its end came.
func (j *jsonLines) noise(chunk []byte) {
	if len(j.dropped) < maxDroppedLog {
		j.dropped = append(j.dropped, chunk[:min(len(chunk), maxDroppedLog-len(j.dropped))]...)
	}
	if !j.inLine {
		j.log.Warn("mcp server wrote a line that is not a JSON-RPC message to stdout; skipped",
			zap.ByteString("line", bytesTrimNewline(j.dropped)))
		j.dropped, j.drop = j.dropped[:0], false
	}
}

// scan follows chunk's strings and nesting.
func (j *jsonLines) scan(chunk []byte) {
	for _, c := range chunk {
		switch {
		case j.inStr && j.escape:
			j.escape = false
		case j.inStr && c == '\\':
			j.escape = true
		case j.inStr && c == '"':
			j.inStr = false
		case j.inStr:
		case c == '"':
			j.inStr = true
		case c == '{' || c == '[':
			j.depth++
		case c == '}' || c == ']':
			j.depth = max(j.depth-1, 0)
		}
	}
}

// opensMessage reports whether line (or the start of it that was read)
// may open a message: blank, or '{' followed by '"' or '}', or '[' by '{'
// or ']' — or by nothing yet on the line (a message spread over lines).
func opensMessage(line []byte) bool {
	first, i := nextByte(line, 0)
	switch first {
	case '\n', 0:
		return true
	case '{', '[':
	default:
		return false
	}
	next, _ := nextByte(line, i+1)
	switch next {
	case '\n', 0:
		return true
	case '"', '}':
		return first == '{'
	case '{', ']':
		return first == '['
	}
	return false
}

// nextByte is the first byte of line from i on that is not a space, a tab
// or '\r', and its index; 0 when there is none.
func nextByte(line []byte, i int) (byte, int) {
	for ; i < len(line); i++ {
		if c := line[i]; c != ' ' && c != '\t' && c != '\r' {
			return c, i
		}
	}
	return 0, i
}

// blank reports whether line holds only white space.
func blank(line []byte) bool {
	c, _ := nextByte(line, 0)
	return c == '\n' || c == 0
}

// isMessage reports whether line, a whole line, may be a JSON-RPC message
// (or a batch of them): valid JSON naming "jsonrpc".
func isMessage(line []byte) bool {
	return json.Valid(line) && bytes.Contains(line, []byte(`"jsonrpc"`))
}

func bytesTrimNewline(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// Close does nothing: the session ends by closing stdin (stdioProcess).
func (j *jsonLines) Close() error { return nil }
