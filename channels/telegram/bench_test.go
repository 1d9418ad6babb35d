package telegram

import (
	"encoding/json"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/gateway/gateway/channels"
)

var benchUpdate = []byte(`{"update_id":1001,"message":{"message_id":77,"date":1700000000,
"chat":{"id":-1001234567890,"type":"supergroup","title":"Team","is_forum":true},
"from":{"id":222,"is_bot":false,"first_name":"Bob","last_name":"B"},
"message_thread_id":42,"is_topic_message":true,
"reply_to_message":{"message_id":42,"date":1699990000,"chat":{"id":-1001234567890,"type":"supergroup"},
"from":{"id":4242,"is_bot":true,"first_name":"Bot"},"forum_topic_created":{"name":"T","icon_color":1}},
"text":"@gateway_test_bot please summarise the thread so far","entities":[{"type":"mention","offset":0,"length":17}]}}`)

var benchReply = strings.Repeat("Here is **the answer** with `code`, a [link](https://example.com) & <escapes>.\n\n", 20) +
	"```go\nfunc main() {\n\tfmt.Println(\"hi\")\n}\n```\n"

func benchAdapter(b *testing.B) *Adapter {
	a, err := New("default", Config{Token: "1:x"}, Options{Logger: zap.NewNop()})
	if err != nil {
		b.Fatal(err)
	}
	a.self.Store(&botIdentity{ID: 4242, UserName: "gateway_test_bot"})
	return a
}

// BenchmarkNormalise decodes one forum-topic update and normalises it.
func BenchmarkNormalise(b *testing.B) {
	a := benchAdapter(b)
	b.ReportAllocs()
	for b.Loop() {
		var u update
		if err := json.Unmarshal(benchUpdate, &u); err != nil {
			b.Fatal(err)
		}
		if in, reason := a.normalise(&u); reason != "" || in.ThreadID != "42" {
			b.Fatalf("dropped: %s %+v", reason, in)
		}
	}
}

// BenchmarkFormat splits and converts a ~1.7 KB Markdown reply.
func BenchmarkFormat(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchReply)))
	for b.Loop() {
		for _, c := range channels.SplitMarkdown(benchReply, MaxMessageLength) {
			_ = FormatHTML(c)
		}
	}
}

// BenchmarkFormatAdversarial formats 4 KB of unclosed emphasis markers,
// the worst case of the inline scanner.
func BenchmarkFormatAdversarial(b *testing.B) {
	s := strings.Repeat("*a _b **c ~~d [e](", 4096/18)
	b.ReportAllocs()
	for b.Loop() {
		_ = FormatHTML(s)
	}
}
