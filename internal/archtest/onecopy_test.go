package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// renameAllowed are the production files that may call os.Rename outside
// internal/atomicfile, each with its reason. Everything else replaces files
// through atomicfile (WriteFile, Rename), the one copy of the durable
// sequence SPEC §3.3 needs: a hand-rolled copy has twice forgotten the
// directory fsync or the file's own fsync.
var renameAllowed = map[string]string{
	// A streamed rewrite of a log too large to hold as one []byte: it
	// fsyncs the new file and then the directory (atomicfile.SyncDir), and
	// must keep appending to the old file when only the directory sync
	// fails, which atomicfile.Rename cannot tell apart from a failed rename.
	"sessions/filestore/roomhistory_file.go": "streamed rewrite",
}

// TestOneCopyOfTheAtomicWrite: no production code renames files by hand.
func TestOneCopyOfTheAtomicWrite(t *testing.T) {
	root := repoRoot(t)
	fset := token.NewFileSet()
	seen := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if strings.HasPrefix(rel, "internal/atomicfile/") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		for _, call := range osRenameCalls(f) {
			if _, ok := renameAllowed[rel]; ok {
				seen[rel] = true
				continue
			}
			t.Errorf("%s: os.Rename by hand; replace files through internal/atomicfile (WriteFile or Rename), which fsyncs the file and the directory", fset.Position(call.Pos()))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for file := range renameAllowed {
		if !seen[file] {
			t.Errorf("%s is allowed to call os.Rename but no longer does: remove it from renameAllowed", file)
		}
	}
}

// osRenameCalls returns the calls of os.Rename in f, under whatever name
// f imports package os.
func osRenameCalls(f *ast.File) []*ast.CallExpr {
	name := ""
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == "os" {
			name = "os"
			if imp.Name != nil {
				name = imp.Name.Name
			}
		}
	}
	if name == "" {
		return nil
	}
	var calls []*ast.CallExpr
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok || sel.Sel.Name != "Rename" {
			return true
		}
		if id, ok := sel.X.(*ast.Ident); ok && id.Name == name {
			calls = append(calls, call)
		}
		return true
	})
	return calls
}
