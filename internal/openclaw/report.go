package openclaw

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
)

// Report counts what an import could not bring over, by field: a member
// of a session entry, an entry type of a transcript, a table of the
// reference system's databases.
type Report struct {
	m map[string]*Unmapped
}

// Unmapped is one field an import did not map, how often it met it, and
// what happened to it.
type Unmapped struct {
	Field string `json:"field"`
	Count int    `json:"count"`
	Why   string `json:"why"`
}

func (r *Report) add(field, why string) { r.addN(field, 1, why) }

func (r *Report) addN(field string, n int, why string) {
	if n <= 0 {
		return
	}
	if r.m == nil {
		r.m = map[string]*Unmapped{}
	}
	u, ok := r.m[field]
	if !ok {
		u = &Unmapped{Field: field, Why: why}
		r.m[field] = u
	}
	u.Count += n
}

// List returns the unmapped fields sorted by name.
func (r *Report) List() []Unmapped {
	out := make([]Unmapped, 0, len(r.m))
	for _, u := range r.m {
		out = append(out, *u)
	}
	slices.SortFunc(out, func(a, b Unmapped) int { return cmp.Compare(a.Field, b.Field) })
	return out
}

// Print writes the unmapped fields as a table.
func (r *Report) Print(w io.Writer) {
	l := r.List()
	if len(l) == 0 {
		fmt.Fprintln(w, "unmapped: nothing")
		return
	}
	fmt.Fprintln(w, "unmapped:")
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  FIELD\tCOUNT\tWHAT HAPPENED")
	for _, u := range l {
		fmt.Fprintf(tw, "  %s\t%d\t%s\n", u.Field, u.Count, u.Why)
	}
	_ = tw.Flush()
}
