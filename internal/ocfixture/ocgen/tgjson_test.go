package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// grammY posts JSON bodies; through JSONForm the fake Bot API reads them as
// the form the Go client sends.
func TestJSONFormSendMessage(t *testing.T) {
	f, err := StartFakes(&Model{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	body := `{"chat_id":-1003001,"text":"hi <b>there</b>","parse_mode":"HTML","message_thread_id":42,` +
		`"reply_parameters":{"message_id":7},"disable_notification":false,"link_preview_options":null}`
	resp, err := http.Post(f.BotAPIRoot+"/bot"+f.Telegram.Token()+"/sendMessage", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ans struct {
		OK          bool   `json:"ok"`
		Description string `json:"description"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&ans); err != nil || !ans.OK {
		t.Fatalf("sendMessage answered %+v, %v", ans, err)
	}
	sent := f.Telegram.Sent()
	if len(sent) != 1 {
		t.Fatalf("sent %d messages, want 1", len(sent))
	}
	s := sent[0]
	if s.ChatID != -1003001 || s.ThreadID != 42 || s.Text != "hi <b>there</b>" || s.ParseMode != "HTML" {
		t.Errorf("sent %+v, want chat -1003001, thread 42, the HTML text", s)
	}
}

func TestJSONFormRejectsNonObject(t *testing.T) {
	var reached bool
	h := JSONForm(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached = true }))
	rec := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodPost, "/botX/sendMessage", bytes.NewBufferString(`[1,2]`))
	r.Header.Set("Content-Type", "application/json; charset=utf-8")
	h.ServeHTTP(rec, r)
	if rec.Code != http.StatusBadRequest || reached {
		t.Errorf("a JSON array body: status %d, reached the fake %v; want 400 and not reached", rec.Code, reached)
	}
}

func TestJSONToFormValues(t *testing.T) {
	form, err := jsonToForm(strings.NewReader(`{"a":"x","n":12345678901234,"b":true,"o":{"k":[1]},"z":null}`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a": "x", "n": "12345678901234", "b": "true", "o": `{"k":[1]}`}
	for k, v := range want {
		if got := form.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if _, ok := form["z"]; ok {
		t.Error("a null parameter became a form value")
	}
}
