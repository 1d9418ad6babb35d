package archtest

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/gateway/gateway/"

// pkgInfo is what the tests need to know about one package directory.
type pkgInfo struct {
	dir     string // relative, slash-separated
	imports map[string]bool
	hasDoc  bool
	name    string
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("repo root not found at %s: %v", root, err)
	}
	return root
}

// loadPackages parses the non-test Go files of every package in the repo.
func loadPackages(t *testing.T) map[string]*pkgInfo {
	t.Helper()
	root := repoRoot(t)
	pkgs := map[string]*pkgInfo{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		rel = filepath.ToSlash(rel)
		p := pkgs[rel]
		if p == nil {
			p = &pkgInfo{dir: rel, imports: map[string]bool{}, name: f.Name.Name}
			pkgs[rel] = p
		}
		if f.Doc != nil && strings.TrimSpace(f.Doc.Text()) != "" {
			p.hasDoc = true
		}
		for _, imp := range f.Imports {
			ip := strings.Trim(imp.Path.Value, `"`)
			if strings.HasPrefix(ip, module) {
				p.imports[strings.TrimPrefix(ip, module)] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < 8 {
		t.Fatalf("found only %d packages; is the walk broken?", len(pkgs))
	}
	return pkgs
}

// leaf lists the internal utility packages any package may import: each
// imports no other project package (checked by rule).
var leaf = map[string]bool{"internal/atomicfile": true, "internal/secret": true}

func under(dir, prefix string) bool { return dir == prefix || strings.HasPrefix(dir, prefix+"/") }

// rule returns the reason an import of to from from is forbidden, or "".
func rule(from, to string) string {
	switch {
	case leaf[from]:
		return "a leaf utility package imports no other project package"
	case leaf[to]:
		// One copy of a routine every layer needs (issue 12: the atomic
		// file write existed four times); it depends on nothing, so it
		// bends no layering rule.
		return ""
	case under(from, "routing"):
		return "routing imports no other project package"
	case under(from, "lanes"):
		return "lanes imports no other project package"
	case under(from, "sessions") && !under(to, "routing"):
		return "sessions imports only routing"
	case under(from, "channels") && (under(to, "sessions") || under(to, "agents") || under(to, "lanes")):
		return "channels never import sessions, agents or lanes"
	case strings.HasPrefix(from, "channels/") && strings.HasPrefix(to, "channels/"):
		a := strings.SplitN(strings.TrimPrefix(from, "channels/"), "/", 2)[0]
		b := strings.SplitN(strings.TrimPrefix(to, "channels/"), "/", 2)[0]
		if a != b {
			return "channel adapters never import each other"
		}
	case under(from, "agents") && (under(to, "channels") || under(to, "lanes")):
		return "agents never imports channels or lanes"
	}
	return ""
}

func TestImportRules(t *testing.T) {
	pkgs := loadPackages(t)
	dirs := make([]string, 0, len(pkgs))
	for d := range pkgs {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, d := range dirs {
		for imp := range pkgs[d].imports {
			if why := rule(d, imp); why != "" {
				t.Errorf("%s imports %s: %s (SPEC §1)", d, imp, why)
			}
		}
	}
}

func TestRuleTable(t *testing.T) {
	tests := []struct {
		from, to string
		bad      bool
	}{
		{"routing", "sessions", true},
		{"lanes", "routing", true},
		{"sessions", "routing", false},
		{"sessions", "lanes", true},
		{"channels/telegram", "channels", false},
		{"channels/telegram", "sessions", true},
		{"channels/telegram", "channels/discord", true},
		{"channels/telegram/telegramtest", "channels/telegram", false},
		{"agents", "channels", true},
		{"agents/openai", "agents/llm", false},
		{"agents", "lanes", true},
		{"dispatch", "lanes", false},
		{"sessions", "internal/atomicfile", false},
		{"routing", "internal/atomicfile", false},
		{"internal/atomicfile", "routing", true},
	}
	for _, tt := range tests {
		if got := rule(tt.from, tt.to) != ""; got != tt.bad {
			t.Errorf("rule(%s -> %s) forbidden=%v, want %v", tt.from, tt.to, got, tt.bad)
		}
	}
}

func TestEveryPackageHasDoc(t *testing.T) {
	for d, p := range loadPackages(t) {
		if !p.hasDoc {
			t.Errorf("package %s (%s) has no package doc comment", p.name, d)
		}
	}
}

func TestRequiredLayout(t *testing.T) {
	root := repoRoot(t)
	for _, d := range []string{"cmd/gateway", "channels", "channels/telegram", "channels/discord", "channels/web",
		"routing", "sessions", "lanes", "agents", "configs", "deploy"} {
		if st, err := os.Stat(filepath.Join(root, d)); err != nil || !st.IsDir() {
			t.Errorf("required directory %s missing", d)
		}
	}
}
