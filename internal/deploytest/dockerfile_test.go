package deploytest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// stage is one FROM ... of a Dockerfile, its instructions in order.
type stage struct {
	from, name string
	line       int
	ins        []instruction
}

type instruction struct {
	op   string // upper case: RUN, COPY, USER, ...
	args string
	line int
}

// parseDockerfile reads the stages of a Dockerfile: comments dropped,
// continuation lines joined, one instruction per logical line.
func parseDockerfile(t *testing.T, path string) []stage {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var (
		stages  []stage
		logical strings.Builder
		start   int
	)
	add := func(text string, line int) {
		op, args, _ := strings.Cut(strings.TrimSpace(text), " ")
		op, args = strings.ToUpper(op), strings.TrimSpace(args)
		if op == "FROM" {
			f := strings.Fields(args)
			s := stage{from: f[0], line: line}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				s.name = f[2]
			}
			stages = append(stages, s)
			return
		}
		if len(stages) == 0 {
			if op != "ARG" {
				t.Fatalf("%s:%d: %s before the first FROM", path, line, op)
			}
			return
		}
		s := &stages[len(stages)-1]
		s.ins = append(s.ins, instruction{op: op, args: args, line: line})
	}
	for i, raw := range strings.Split(string(b), "\n") {
		l := strings.TrimSpace(raw)
		if strings.HasPrefix(l, "#") || (l == "" && logical.Len() == 0) {
			continue
		}
		if logical.Len() == 0 {
			start = i + 1
		}
		if cont, ok := strings.CutSuffix(l, "\\"); ok {
			logical.WriteString(cont + " ")
			continue
		}
		logical.WriteString(l)
		add(logical.String(), start)
		logical.Reset()
	}
	if logical.Len() > 0 {
		t.Fatalf("%s: ends inside a continued line", path)
	}
	return stages
}

// last returns the arguments of the stage's last op instruction ("" if none).
func (s stage) last(op string) string {
	for i := len(s.ins) - 1; i >= 0; i-- {
		if s.ins[i].op == op {
			return s.ins[i].args
		}
	}
	return ""
}

// env is the stage's ENV (NAME=value pairs; values without spaces).
func (s stage) env() map[string]string {
	env := map[string]string{}
	for _, in := range s.ins {
		if in.op != "ENV" {
			continue
		}
		for _, kv := range strings.Fields(in.args) {
			if k, v, ok := strings.Cut(kv, "="); ok {
				env[k] = v
			}
		}
	}
	return env
}

// execForm decodes an exec-form ENTRYPOINT or CMD (a JSON array); the
// shell form would run under /bin/sh, which the distroless image lacks
// and which would not pass SIGTERM on.
func execForm(t *testing.T, s stage, op string) []string {
	t.Helper()
	var v []string
	if err := json.Unmarshal([]byte(s.last(op)), &v); err != nil || len(v) == 0 {
		t.Fatalf("stage %s (line %d): %s %q is not the exec form (a JSON array): %v", s.name, s.line, op, s.last(op), err)
	}
	return v
}

// TestDockerfileImages checks deploy/Dockerfile's two images without
// Docker: the default (last stage) is the static distroless one; the
// node variant (--target node, stdio MCP servers on Node.js) runs the
// same binary the same way — non-root user 65532, the same command,
// health check, state volume, listen address and stop signal, and the
// main image's entrypoint behind an init that reaps the servers'
// children — with Node.js from an official LTS image.
func TestDockerfileImages(t *testing.T) {
	path := filepath.Join(root, "deploy", "Dockerfile")
	stages := parseDockerfile(t, path)
	byName := map[string]stage{}
	for _, s := range stages {
		if s.name != "" {
			byName[s.name] = s
		}
		if strings.HasSuffix(s.from, ":latest") || !strings.Contains(s.from, ":") {
			t.Errorf("stage %s (line %d): base %q has no pinned tag", s.name, s.line, s.from)
		}
	}
	main := stages[len(stages)-1]
	if !strings.HasPrefix(main.from, "gcr.io/distroless/static") || !strings.HasSuffix(main.from, ":nonroot") {
		t.Errorf("the last stage (the image a build without --target gives) is %q, want distroless static nonroot", main.from)
	}
	node, ok := byName["node"]
	if !ok {
		t.Fatalf("%s: no stage named node (docker build --target node)", path)
	}
	if _, ok := byName["build"]; !ok {
		t.Fatalf("%s: no stage named build", path)
	}
	if m := regexp.MustCompile(`^node:(\d+)-[a-z]+-slim$`).FindStringSubmatch(node.from); m == nil {
		t.Errorf("node stage base %q, want an official node:<LTS>-<debian>-slim image", node.from)
	} else if major, _ := strconv.Atoi(m[1]); major < 20 || major%2 != 0 {
		t.Errorf("node stage base %q: Node %d is not an LTS line (even, 20 or later)", node.from, major)
	}

	for _, s := range []stage{main, node} {
		// Non-root, and nothing after USER that needs root.
		user := s.last("USER")
		if user != "65532:65532" {
			t.Errorf("stage %s: USER %q, want 65532:65532 (the state volume's owner)", s.name, user)
		}
		seenUser := false
		for _, in := range s.ins {
			switch {
			case in.op == "USER":
				seenUser = true
			case seenUser && in.op == "RUN":
				t.Errorf("stage %s line %d: RUN after USER runs as the unprivileged user: move it before", s.name, in.line)
			}
		}
		copies := []string{}
		for _, in := range s.ins {
			if in.op == "COPY" {
				copies = append(copies, strings.Join(strings.Fields(in.args), " "))
			}
		}
		for _, want := range []string{"--from=build /out/gateway /usr/local/bin/gateway",
			"--from=build --chown=65532:65532 /out/state /var/lib/gateway"} {
			if !slices.Contains(copies, want) {
				t.Errorf("stage %s: no COPY %s (copies: %q)", s.name, want, copies)
			}
		}
	}

	// The node variant runs exactly what the main image runs.
	mainEntry, nodeEntry := execForm(t, main, "ENTRYPOINT"), execForm(t, node, "ENTRYPOINT")
	if len(nodeEntry) < len(mainEntry) || !slices.Equal(nodeEntry[len(nodeEntry)-len(mainEntry):], mainEntry) {
		t.Errorf("node ENTRYPOINT %q does not end with the main image's %q", nodeEntry, mainEntry)
	} else if init := nodeEntry[:len(nodeEntry)-len(mainEntry)]; !slices.Equal(init, []string{"/usr/bin/tini", "--"}) {
		t.Errorf("node ENTRYPOINT runs the gateway behind %q, want tini (\"/usr/bin/tini\", \"--\") to reap MCP servers' children", init)
	}
	if !strings.Contains(node.last("RUN"), "tini") {
		t.Errorf("node stage installs no tini, which its ENTRYPOINT runs")
	}
	if a, b := execForm(t, main, "CMD"), execForm(t, node, "CMD"); !slices.Equal(a, b) {
		t.Errorf("CMD: main %q, node %q", a, b)
	}
	for _, op := range []string{"HEALTHCHECK", "EXPOSE", "VOLUME", "STOPSIGNAL"} {
		a, b := strings.Join(strings.Fields(main.last(op)), " "), strings.Join(strings.Fields(node.last(op)), " ")
		if a == "" || a != b {
			t.Errorf("%s: main %q, node %q; want the same, set", op, a, b)
		}
	}
	me, ne := main.env(), node.env()
	for _, k := range []string{"GATEWAY_STATE_DIR", "GATEWAY_HTTP_LISTEN"} {
		if me[k] == "" || me[k] != ne[k] {
			t.Errorf("ENV %s: main %q, node %q", k, me[k], ne[k])
		}
	}
	// npm and npx write their cache under HOME: a directory the user owns.
	if home := ne["HOME"]; home == "" || !strings.HasPrefix(ne["NPM_CONFIG_CACHE"], home+"/") {
		t.Errorf("node ENV HOME %q, NPM_CONFIG_CACHE %q: want a home the user owns holding the npm cache", home, ne["NPM_CONFIG_CACHE"])
	} else if !strings.Contains(node.last("RUN"), "-o 65532 -g 65532 "+home) {
		t.Errorf("node stage does not create HOME %s owned by 65532", home)
	}

	// The operator finds the variant in the docs.
	for _, doc := range []string{"deploy/README.md", "deploy/OPERATIONS.md"} {
		b, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "--target node") {
			t.Errorf("%s does not say how to build the node image (--target node)", doc)
		}
	}
}
