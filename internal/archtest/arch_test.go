package archtest

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
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
