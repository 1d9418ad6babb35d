package main

// The crash test's checks: what the fake Telegram recorded (every input
// answered, a chunk twice only in the documented window) and what the
// transcripts hold (one reply per input).

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gateway/gateway/channels/telegram/telegramtest"
)

// outsideWindow returns the duplicated chunks that the documented window
// does not explain: a chunk may reach the chat twice only if the process
// died right after delivering it, so its first copy is the last message
// its run sent to that chat, and the second copy comes from a later run.
// A message's run is its via tag (crashDaemon.start).
func outsideWindow(sent []telegramtest.Sent) []string {
	run := func(s telegramtest.Sent) int {
		n, err := strconv.Atoi(strings.TrimPrefix(s.Via, "run"))
		if err != nil {
			return -1 // not sent through a run's tag: never explained
		}
		return n
	}
	first := map[string]int{}
	var out []string
	for i, s := range sent {
		if s.Method != "sendMessage" || !strings.HasPrefix(s.Text, "[") {
			continue
		}
		key := strconv.FormatInt(s.ChatID, 10) + "|" + s.Text
		j, dup := first[key]
		if !dup {
			first[key] = i
			continue
		}
		ok := run(sent[j]) >= 0 && run(s) > run(sent[j])
		for k := j + 1; ok && k < len(sent); k++ {
			if sent[k].Via == sent[j].Via && sent[k].ChatID == s.ChatID && sent[k].Method == "sendMessage" {
				ok = false // the run went on sending to that chat: not a death right after j
			}
		}
		if !ok {
			out = append(out, fmt.Sprintf("chat %d message %d (first %d, runs %s and %s): %s", s.ChatID, i, j,
				sent[j].Via, s.Via, strings.SplitN(s.Text, "\n", 2)[0]))
		}
	}
	return out
}

var runTagRE = regexp.MustCompile(`runs run(\d+) and run(\d+)`)

// sendLog is what the runs named in outside (outsideWindow's findings)
// logged about sending and taking over replies: resends, retries, take-overs.
func (d *crashDaemon) sendLog(outside []string) string {
	runs := map[string]bool{}
	for _, o := range outside {
		for _, m := range runTagRE.FindAllStringSubmatch(o, -1) {
			runs[m[1]], runs[m[2]] = true, true
		}
	}
	var b strings.Builder
	for r := range runs {
		n, _ := strconv.Atoi(r)
		f, err := os.Open(filepath.Join(d.logs, fmt.Sprintf("run-%03d.log", n)))
		if err != nil {
			continue
		}
		lines := 0
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() && lines < 40 {
			l := sc.Text()
			if strings.Contains(l, "retrying") || strings.Contains(l, "resuming reply") || strings.Contains(l, "took over") ||
				strings.Contains(l, "answered before") || strings.Contains(l, "outbox") || strings.Contains(l, "lease") {
				fmt.Fprintf(&b, "  run %s: %s\n", r, l)
				lines++
			}
		}
		f.Close()
	}
	return b.String()
}

// lateFromDeadRuns counts the messages recorded after a later run's.
func lateFromDeadRuns(sent []telegramtest.Sent) int {
	late, newest := 0, 0
	for _, s := range sent {
		n, err := strconv.Atoi(strings.TrimPrefix(s.Via, "run"))
		if err != nil {
			continue
		}
		if n < newest {
			late++
		}
		newest = max(newest, n)
	}
	return late
}

type crashReport struct {
	unanswered []int
	// givenUp are the unanswered inputs whose chat got the give-up notice
	// (dispatch.giveUp: the process died too often while their turn ran).
	givenUp    []int
	superseded int // interrupt mode: dropped for a newer message that was answered
	chunks     int
	dupChunks  int
	dupLines   []string
}

// countReplies attributes every delivered chunk to the markers its lines
// name; a chunk whose lines were all delivered before is a duplicate.
func countReplies(sent []telegramtest.Sent, total int) crashReport {
	var rep crashReport
	seen := map[string]bool{}
	answered := map[string]bool{}
	notified := map[string]bool{}
	for _, s := range sent {
		if s.Method == "sendMessage" && strings.HasPrefix(s.Text, "Sorry — I could not answer your message") {
			if m := markerRE.FindString(s.Text); m != "" {
				notified[m] = true
			}
			continue
		}
		if s.Method != "sendMessage" || !strings.HasPrefix(s.Text, "[") {
			continue
		}
		rep.chunks++
		allSeen := true
		for _, line := range strings.Split(s.Text, "\n") {
			if line == "" {
				continue
			}
			key := strconv.FormatInt(s.ChatID, 10) + "|" + line
			if !seen[key] {
				allSeen = false
			}
			seen[key] = true
			head, _, _ := strings.Cut(line, "]")
			for _, m := range markerRE.FindAllString(head, -1) {
				answered[m] = true
			}
		}
		if allSeen {
			rep.dupChunks++
			rep.dupLines = append(rep.dupLines, strings.SplitN(s.Text, "\n", 2)[0])
		}
	}
	for i := range total {
		if answered["m"+strconv.Itoa(i)] {
			continue
		}
		// Interrupt mode drops a message that a newer one of its chat
		// supersedes (finished, summarised into the next turn; a crash
		// before that turn loses the summary by design): it counts as
		// superseded once a later message of its chat is answered.
		if chat := i % crashChats; chat >= 15 {
			later := false
			for j := i + crashChats; j < total && !later; j += crashChats {
				later = answered["m"+strconv.Itoa(j)]
			}
			if later {
				rep.superseded++
				continue
			}
		}
		rep.unanswered = append(rep.unanswered, i)
		if notified["m"+strconv.Itoa(i)] {
			rep.givenUp = append(rep.givenUp, i)
		}
	}
	return rep
}

// checkCrashTranscripts: every journal record is appended once as a user
// entry, and no input gets two assistant replies (two replies without a
// user message between them).
func checkCrashTranscripts(t *testing.T, dir string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts in %s (%v)", dir, err)
	}
	tally := newCrashTally(t)
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		prev := ""
		for n := 1; sc.Scan(); n++ {
			var e struct {
				Type      string   `json:"type"`
				RecordIDs []string `json:"recordIds"`
				Message   struct {
					Role string `json:"role"`
				} `json:"message"`
			}
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				t.Errorf("%s:%d: %v", p, n, err)
				continue
			}
			if e.Type != "message" {
				continue
			}
			prev = tally.message(fmt.Sprintf("%s:%d", filepath.Base(p), n), prev, e.Message.Role, e.RecordIDs)
		}
		f.Close()
	}
	tally.check()
}

// crashTally counts the journal records transcripts carry and reports
// a second assistant reply to one input.
type crashTally struct {
	t       *testing.T
	records map[string]int
}

func newCrashTally(t *testing.T) *crashTally {
	return &crashTally{t: t, records: map[string]int{}}
}

// message counts one transcript message at where whose predecessor in the
// transcript had role prev ("" for none); it returns role.
func (c *crashTally) message(where, prev, role string, recordIDs []string) string {
	c.t.Helper()
	for _, id := range recordIDs {
		c.records[id]++
	}
	if role == "assistant" && prev == "assistant" {
		c.t.Errorf("%s: a second assistant reply to the same input", where)
	}
	return role
}

// check reports every record appended more than once.
func (c *crashTally) check() {
	c.t.Helper()
	for id, n := range c.records {
		if n > 1 {
			c.t.Errorf("record %s appended %d times", id, n)
		}
	}
}

// uncertainSends counts, from every run's log in dir, the reply chunks
// sent again whose first attempt's outcome was unknown: the chunk a
// resumed reply sends first (its log line says sent < chunks) and the
// retries after a failure that may have been posted (outcome_known
// false). Each is one increment of gateway_outbound_uncertain_total in
// its run; the killed runs' counters die with them, their logs do not.
func uncertainSends(t *testing.T, dir string) int {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "run-*.log"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no run logs in %s (%v)", dir, err)
	}
	n := 0
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			line := sc.Text()
			resumed := strings.Contains(line, "\tresuming reply from the outbox\t")
			retried := strings.Contains(line, "\treply chunk not delivered; retrying\t")
			if !resumed && !retried {
				continue
			}
			var f struct {
				Sent, Chunks int
				Known        *bool `json:"outcome_known"`
			}
			if i := strings.Index(line, "\t{"); i < 0 || json.Unmarshal([]byte(line[i+1:]), &f) != nil {
				t.Errorf("%s: unreadable log line %q", p, line)
				continue
			}
			if (resumed && f.Sent < f.Chunks) || (retried && f.Known != nil && !*f.Known) {
				n++
			}
		}
		f.Close()
	}
	return n
}
