package gatewayd

import (
	"bytes"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// TestConsoleLogHasNoStackBelowError: log.format console is readable lines
// with the production settings: a warning carries no Go stack trace (the
// development config printed one on every warning), an error does.
func TestConsoleLogHasNoStackBelowError(t *testing.T) {
	zc := loggerConfig("console", zapcore.InfoLevel)
	var buf bytes.Buffer
	enc := zapcore.NewConsoleEncoder(zc.EncoderConfig)
	log, err := zc.Build(zap.WrapCore(func(zapcore.Core) zapcore.Core {
		return zapcore.NewCore(enc, zapcore.AddSync(&buf), zc.Level)
	}))
	if err != nil {
		t.Fatal(err)
	}
	log.Warn("config key changed but needs a restart to apply", zap.String("key", "http.listen"))
	warn := buf.String()
	buf.Reset()
	log.Error("config reload rejected")
	errLine := buf.String()
	if strings.Contains(warn, "gatewayd.TestConsoleLog") || strings.Count(warn, "\n") != 1 || !strings.Contains(warn, "\tWARN\t") {
		t.Errorf("warning:\n%s\nwant one line without a stack", warn)
	}
	if strings.HasPrefix(warn, "{") || !strings.Contains(warn, `{"key": "http.listen"}`) {
		t.Errorf("warning is not a console line: %s", warn)
	}
	if !strings.Contains(errLine, "gatewayd.TestConsoleLogHasNoStackBelowError") {
		t.Errorf("error:\n%s\nwant a stack trace", errLine)
	}
}
