package gatewayd

import (
	"path/filepath"

	"github.com/fsnotify/fsnotify"
)

// configWatch decides which file system events touch the config file. It
// watches the file's directory, not the file, so it survives the file
// being replaced (rename over, vim's backup dance, delete and recreate).
// A config file that is a symlink changes when what it resolves to does:
// the Kubernetes ConfigMap volume (gateway.yaml -> ..data/gateway.yaml,
// ..data swapped to a new timestamped directory by a rename) never touches
// the name gateway.yaml itself, and a link to a file in another directory
// is saved there. So each event in a watched directory resolves the link
// again, and the directory of the file it resolves to is watched too.
// (A link in the chain that lives in a third directory is not watched:
// SIGHUP still reloads.)
type configWatch struct {
	w    *fsnotify.Watcher
	path string // the config file as configured, absolute
	real string // what path resolves to ("" while it does not)
	// realDir is the watched directory of real when it is not path's.
	realDir string
}

// newConfigWatch watches path's directory and, for a symlink, its
// target's.
func newConfigWatch(w *fsnotify.Watcher, path string) (*configWatch, error) {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	c := &configWatch{w: w, path: path}
	if err := w.Add(filepath.Dir(path)); err != nil {
		return nil, err
	}
	c.resolve()
	return c, nil
}

// touches reports whether ev may have changed the config file's content:
// it names the file, or the file it resolved to, or the file now resolves
// to another one.
func (c *configWatch) touches(ev fsnotify.Event) bool {
	before := c.real
	c.resolve()
	return ev.Name == c.path || (before != "" && ev.Name == before) || c.real != before
}

// resolve follows path's symlinks again and watches the directory of the
// file it leads to (none while it leads nowhere).
func (c *configWatch) resolve() {
	real, err := filepath.EvalSymlinks(c.path)
	if err != nil {
		real = ""
	}
	if real == c.real {
		return
	}
	c.real = real
	dir := ""
	if real != "" && filepath.Dir(real) != filepath.Dir(c.path) {
		dir = filepath.Dir(real)
	}
	if dir == c.realDir {
		return
	}
	if c.realDir != "" {
		_ = c.w.Remove(c.realDir) // may be gone already (a ConfigMap's old directory)
	}
	c.realDir = ""
	if dir != "" && c.w.Add(dir) == nil {
		c.realDir = dir
	}
}
