package gatewayd

import (
	"path/filepath"

	"github.com/fsnotify/fsnotify"
	"go.uber.org/zap"
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
// SIGHUP still reloads.) A directory watch ends with its directory: when
// the file's directory is removed or moved aside (a deployment replacing
// it whole), its parent is watched until the directory is back, and then
// it is watched again and the file read.
type configWatch struct {
	w    *fsnotify.Watcher
	path string // the config file as configured, absolute
	dir  string // path's directory, watched while it is there
	real string // what path resolves to ("" while it does not)
	// realDir is the watched directory of real when it is not path's.
	realDir string
	// lost is set while dir is gone, its watch with it: dir's parent is
	// watched for it to come back.
	lost bool
	log  *zap.Logger
}

// newConfigWatch watches path's directory and, for a symlink, its
// target's.
func newConfigWatch(w *fsnotify.Watcher, path string, log *zap.Logger) (*configWatch, error) {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	c := &configWatch{w: w, path: path, dir: filepath.Dir(path), log: log}
	if err := w.Add(c.dir); err != nil {
		return nil, err
	}
	c.resolve()
	return c, nil
}

// touches reports whether ev may have changed the config file's content:
// it names the file, or the file it resolved to, or the file now resolves
// to another one, or the file's directory is back after it was gone.
func (c *configWatch) touches(ev fsnotify.Event) bool {
	if !c.lost && ev.Name == c.dir && ev.Has(fsnotify.Remove|fsnotify.Rename) {
		c.lose()
	}
	if c.lost {
		if !c.regain() {
			return false
		}
		c.resolve()
		return true
	}
	before := c.real
	c.resolve()
	return ev.Name == c.path || (before != "" && ev.Name == before) || c.real != before
}

// lose watches the parent of the file's directory, which was removed or
// moved aside, for its return (it may be back already).
func (c *configWatch) lose() {
	c.lost = true
	_ = c.w.Remove(c.dir) // ended with the directory
	c.log.Warn("config directory removed or moved; watching for it to come back (SIGHUP still reloads)",
		zap.String("dir", c.dir))
	if err := c.w.Add(filepath.Dir(c.dir)); err != nil {
		c.log.Error("config directory's parent not watched: edits reload only on SIGHUP",
			zap.String("dir", filepath.Dir(c.dir)), zap.Error(err))
	}
}

// regain watches the file's directory again once it is there, and stops
// watching its parent.
func (c *configWatch) regain() bool {
	if c.w.Add(c.dir) != nil {
		return false
	}
	if parent := filepath.Dir(c.dir); parent != c.realDir {
		_ = c.w.Remove(parent)
	}
	c.lost = false
	c.log.Info("config directory back; watching it", zap.String("dir", c.dir))
	return true
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
