package openai

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/gateway/gateway/agents/llm"
	"github.com/gateway/gateway/sessions"
)

// TestStreamCutShortIsNotAnAnswer: a stream that ends with neither a
// finish_reason nor "[DONE]" (a proxy or server that closed the
// connection mid-answer; a 200 whose body is a proxy's HTML page) is an
// error the fallback layer can act on, not a complete answer to store.
// A stream whose last chunk carried a finish_reason stays an answer
// (TestStreamEndsWithoutDone), and so does one ended by "[DONE]".
func TestStreamCutShortIsNotAnAnswer(t *testing.T) {
	for _, tc := range []struct {
		name, contentType, body string
		wantText                []string
	}{
		{name: "cut after text", contentType: "text/event-stream",
			body: `data: {"choices":[{"delta":{"content":"The answer is"}}]}` + "\n\n"},
		{name: "cut inside a tool call", contentType: "text/event-stream",
			body: `data: {"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"rm","arguments":"{\"path\":\"/tmp"}}]}}]}` + "\n\n"},
		{name: "proxy page", contentType: "text/html",
			body: "<html><head><title>Login required</title></head><body>Please sign in</body></html>", wantText: []string{"Login required"}},
		{name: "empty body", contentType: "text/event-stream", body: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newRawServer(t, http.StatusOK, tc.contentType, tc.body)
			msg, err := rawProvider(t, srv.URL).Stream(context.Background(), llm.Request{Model: "m", Messages: []sessions.Message{user("x")}}, nil)
			if err == nil {
				t.Fatalf("no error; stored as an answer: %+v", msg)
			}
			if !llm.ProviderFault(err) {
				t.Errorf("not a provider fault (no fallback would be tried): %v", err)
			}
			for _, s := range tc.wantText {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
		})
	}
	srv := newRawServer(t, http.StatusOK, "text/event-stream",
		`data: {"choices":[{"delta":{"content":"whole"}}]}`+"\n\n"+"data: [DONE]\n\n")
	msg, err := rawProvider(t, srv.URL).Stream(context.Background(), llm.Request{Model: "m"}, nil)
	if err != nil || msg.Text() != "whole" || msg.StopReason != llm.StopEnd {
		t.Fatalf("ended by [DONE]: %q %q, %v", msg.Text(), msg.StopReason, err)
	}
}

// TestStreamErrorInsideAChunk: OpenRouter reports a failure mid-stream as
// a chunk with an "error" object beside its choices and finish_reason
// "error"; that is an error, not the partial text as a finished answer.
func TestStreamErrorInsideAChunk(t *testing.T) {
	for _, tc := range []struct{ name, chunk string }{
		{name: "error beside choices", chunk: `{"id":"gen-1","object":"chat.completion.chunk","error":{"code":502,"message":"Provider disconnected unexpectedly"},` +
			`"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}]}`},
		{name: "error first, spaced", chunk: `{ "error": {"message":"Provider disconnected unexpectedly","code":"server_error"}}`},
		{name: "finish_reason error alone", chunk: `{"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := `data: {"choices":[{"delta":{"content":"half an ans"}}]}` + "\n\n" + "data: " + tc.chunk + "\n\n" + "data: [DONE]\n\n"
			srv := newRawServer(t, http.StatusOK, "text/event-stream", body)
			msg, err := rawProvider(t, srv.URL).Stream(context.Background(), llm.Request{Model: "m", Messages: []sessions.Message{user("x")}}, nil)
			if err == nil {
				t.Fatalf("no error; stored as an answer: %q", msg.Text())
			}
			if !llm.ProviderFault(err) || errors.Is(err, llm.ErrContextOverflow) {
				t.Errorf("want a provider fault: %v", err)
			}
		})
	}
}

// TestStreamToolCallNameRepeated: some OpenAI-compatible servers repeat
// the function name in every fragment of a call; the name is the name,
// not the names joined ("looklook" is no tool). Interleaved fragments of
// two calls, ids arriving after the first fragment, still assemble.
func TestStreamToolCallNameRepeated(t *testing.T) {
	body := strings.Join([]string{
		`data: {"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"look","arguments":""}}]}}]}`,
		`data: {"choices":[{"delta":{"tool_calls":[{"index":1,"id":"c2","function":{"name":"find","arguments":"{\"b\""}}]}}]}`,
		`data: {"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"look","arguments":"{\"a\":"}}]}}]}`,
		`data: {"choices":[{"delta":{"tool_calls":[{"index":1,"function":{"name":"find","arguments":":2}"}}]}}]}`,
		`data: {"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"look","arguments":"1}"}}]}}]}`,
		`data: {"choices":[{"delta":{},"finish_reason":"tool_calls"}]}`,
		`data: [DONE]`, ``,
	}, "\n\n")
	srv := newRawServer(t, http.StatusOK, "text/event-stream", body)
	msg, err := rawProvider(t, srv.URL).Stream(context.Background(), llm.Request{Model: "m", Messages: []sessions.Message{user("x")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range msg.Content {
		got = append(got, c.ID+" "+c.Name+" "+string(c.Arguments))
	}
	want := []string{`c1 look {"a":1}`, `c2 find {"b":2}`}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("calls %q, want %q", got, want)
	}
}

// TestContentFilterStopReason: finish_reason "content_filter" is
// llm.StopRefusal (the runner then tells the member the model declined).
func TestContentFilterStopReason(t *testing.T) {
	srv := newRawServer(t, http.StatusOK, "text/event-stream",
		`data: {"choices":[{"delta":{"content":""},"finish_reason":"content_filter"}]}`+"\n\ndata: [DONE]\n\n")
	msg, err := rawProvider(t, srv.URL).Stream(context.Background(), llm.Request{Model: "m", Messages: []sessions.Message{user("x")}}, nil)
	if err != nil || msg.StopReason != llm.StopRefusal {
		t.Fatalf("stop %q, %v; want %q", msg.StopReason, err, llm.StopRefusal)
	}
}

// TestLengthCutToolCallSaysSo: a stream the output limit ended
// (finish_reason "length") inside a tool call's arguments is an answer
// cut short (llm.StopLength), not a tool-use answer whose call the runner
// would run with the broken arguments.
func TestLengthCutToolCallSaysSo(t *testing.T) {
	srv := newRawServer(t, http.StatusOK, "text/event-stream",
		`data: {"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"rm","arguments":"{\"path\":\"/tmp"}}]}}]}`+"\n\n"+
			`data: {"choices":[{"delta":{},"finish_reason":"length"}]}`+"\n\n"+"data: [DONE]\n\n")
	msg, err := rawProvider(t, srv.URL).Stream(context.Background(), llm.Request{Model: "m", Messages: []sessions.Message{user("x")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if msg.StopReason != llm.StopLength {
		t.Errorf("stop reason %q, want %q", msg.StopReason, llm.StopLength)
	}
}
