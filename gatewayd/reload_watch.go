package gatewayd

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fsnotify/fsnotify"
	"go.uber.org/zap"
)

// configWatch decides which file system events touch the config file. It
// watches directories, not the file, so it survives the file being
// replaced (rename over, vim's backup dance, delete and recreate): the
// file's directory, the directory of the file it resolves to, and each
// directory holding a symlink on the way there. So a swap of any link of
// the chain is seen: the Kubernetes ConfigMap volume (gateway.yaml ->
// ..data/gateway.yaml, ..data swapped to a new timestamped directory by a
// rename, never touching the name gateway.yaml itself), a link to a file
// in another directory saved there, a release layout whose directory link
// is swapped (current/gateway.yaml, current -> releases/2). Each event in
// a watched directory resolves the chain again and moves the watches
// along. A directory watch ends with its directory: while the file's
// directory is gone (removed or moved aside by a deployment replacing it
// whole) its nearest existing ancestor is watched instead, until the
// directory is back and the file is read again.
type configWatch struct {
	w    *fsnotify.Watcher
	path string // the config file as configured, absolute
	dir  string // path's directory
	real string // what path resolves to ("" while it does not)
	// watched maps each watched directory, as added, to the directory it
	// resolved to then (a directory reached through a link is watched
	// again when the link moves).
	watched map[string]string
	// links are the symlinks the chain goes through (their paths).
	links []string
	// lost is set while dir is not there (an ancestor is watched).
	lost bool
	log  *zap.Logger
	// testLooked, when set (tests), runs after a pass of resolve looked
	// for dir (found or not), before the watches move.
	testLooked func(found bool)
}

// newConfigWatch watches path's directory and, for a symlink, the
// directories of its chain.
func newConfigWatch(w *fsnotify.Watcher, path string, log *zap.Logger) (*configWatch, error) {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	c := &configWatch{w: w, path: path, dir: filepath.Dir(path), watched: map[string]string{}, log: log}
	if err := w.Add(c.dir); err != nil {
		return nil, err
	}
	c.watched[c.dir], _ = filepath.EvalSymlinks(c.dir)
	c.resolve()
	return c, nil
}

// touches reports whether ev may have changed the config file's content:
// it names the file, or the file it resolved to, or the file now resolves
// to another one, or the file's directory is back after it was gone.
func (c *configWatch) touches(ev fsnotify.Event) bool {
	if !c.names(ev.Name) {
		return false // another file in a watched directory (the state's, a backup)
	}
	_, dirEnded := c.watched[ev.Name]
	if dirEnded = dirEnded && ev.Has(fsnotify.Remove|fsnotify.Rename); dirEnded {
		// The watch ended with its directory, and fsnotify dropped it
		// then. Not removed here: the event may come after the
		// directory made again under the same name is watched (a
		// removal by name would end that watch).
		delete(c.watched, ev.Name)
	}
	before, wasLost := c.real, c.lost
	c.resolve()
	return ev.Name == c.path || (before != "" && ev.Name == before) || c.real != before || (wasLost && !c.lost) || dirEnded
}

// names reports whether name is one resolving path depends on: the file,
// what it resolves to, a link of the chain, a watched directory, or, while
// the file's directory is gone, that directory or one of its ancestors.
func (c *configWatch) names(name string) bool {
	if name == c.path || name == c.real || slices.Contains(c.links, name) {
		return true
	}
	if _, ok := c.watched[name]; ok {
		return true
	}
	return c.lost && strings.HasPrefix(c.dir+string(filepath.Separator), name+string(filepath.Separator))
}

// resolve follows path's symlinks again and moves the watches to the
// directories the chain now goes through, until they match what it finds
// (a directory that came back while its ancestor's watch was being added
// sent that watch no event; one removed between the look and its watch
// ended that watch).
func (c *configWatch) resolve() {
	for range resolveRetries {
		c.resolveOnce()
		// Settled when the watches match what is there now: the
		// directory watched, or gone with its ancestor watched (whose
		// watch sees it come back). Not when it went between the pass's
		// look and its watch (its watch then ended), or came back.
		_, err := os.Stat(c.dir)
		_, watching := c.watched[c.dir]
		if c.lost == (err != nil) && (c.lost || watching) {
			return
		}
	}
}

// resolveRetries bounds resolve's passes (a directory removed and made
// again over and over while they run).
const resolveRetries = 8

// resolveOnce is one pass of resolve.
func (c *configWatch) resolveOnce() {
	real, err := filepath.EvalSymlinks(c.path)
	if err != nil {
		real = ""
	}
	c.real = real
	want := []string{c.dir}
	_, err = os.Stat(c.dir)
	if c.testLooked != nil {
		c.testLooked(err == nil)
	}
	if err != nil {
		want = []string{existingAncestor(c.dir)}
		if !c.lost {
			c.log.Warn("config directory removed or moved; watching for it to come back (SIGHUP still reloads)",
				zap.String("dir", c.dir))
		}
		c.lost = true
	} else if c.lost {
		c.lost = false
		c.log.Info("config directory back; watching it", zap.String("dir", c.dir))
	}
	c.links = chainLinks(c.path)
	for _, l := range c.links {
		want = append(want, filepath.Dir(l))
	}
	if real != "" {
		want = append(want, filepath.Dir(real))
	}
	keep := map[string]bool{}
	seen := map[string]bool{} // resolved directories: each watched once
	for _, d := range want {
		rd, err := filepath.EvalSymlinks(d)
		if err != nil || seen[rd] {
			continue
		}
		seen[rd] = true
		if was, ok := c.watched[d]; ok && was != rd {
			_ = c.w.Remove(d) // through a link that moved: watch where it leads now
			delete(c.watched, d)
		}
		// Added again when watched already: the directory under the
		// name may be another one (removed or moved aside and made
		// again) whose old one's end is not reported yet, or never will
		// be; fsnotify then moves the name's watch to it, and keeps the
		// watch of the same one as it is. (Its identity cannot tell:
		// a directory made again may have the removed one's inode.)
		if err := c.w.Add(d); err != nil {
			continue // gone meanwhile: resolve looks again
		}
		c.watched[d] = rd
		keep[d] = true
	}
	for d := range c.watched {
		if !keep[d] {
			_ = c.w.Remove(d) // may be gone already (a ConfigMap's old directory)
			delete(c.watched, d)
		}
	}
}

// existingAncestor is the nearest ancestor of dir that exists.
func existingAncestor(dir string) string {
	for {
		parent := filepath.Dir(dir)
		if _, err := os.Stat(parent); err == nil || parent == dir {
			return parent
		}
		dir = parent
	}
}

// maxLinks bounds the links linkDirs follows (a loop ends there).
const maxLinks = 40

// chainLinks lists the symlinks that resolving path (absolute) goes
// through, in the order met, as far as path resolves.
func chainLinks(path string) []string {
	var links []string
	cur, rest, hops := "/", splitPath(path), 0
	for len(rest) > 0 {
		comp := rest[0]
		rest = rest[1:]
		switch comp {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, comp)
		fi, err := os.Lstat(next)
		if err != nil {
			return links
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			cur = next
			continue
		}
		if hops++; hops > maxLinks {
			return links
		}
		links = append(links, next)
		target, err := os.Readlink(next)
		if err != nil {
			return links
		}
		if filepath.IsAbs(target) {
			cur = "/"
		}
		rest = append(splitPath(target), rest...)
	}
	return links
}

// splitPath is p's components.
func splitPath(p string) []string {
	return strings.Split(filepath.ToSlash(p), "/")
}
