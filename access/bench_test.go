package access

import (
	"testing"
)

func BenchmarkCheckDMAllowFrom(b *testing.B) {
	p, _ := New(map[Account]Config{{"discord", "default"}: {AllowFrom: []string{"u1", "u2", "u3"}}}, Options{})
	in := dm("u2")
	b.ReportAllocs()
	for b.Loop() {
		if !p.Check(in).Allowed() {
			b.Fatal("refused")
		}
	}
}

func BenchmarkCheckDMApproved(b *testing.B) {
	s, err := OpenPairingStore(b.TempDir(), StoreOptions{})
	if err != nil {
		b.Fatal(err)
	}
	p, _ := New(map[Account]Config{{"discord", "default"}: {}}, Options{Store: s})
	d := p.Check(dm("u1"))
	if _, err := s.Approve("discord", d.Code); err != nil {
		b.Fatal(err)
	}
	in := dm("u1")
	b.ReportAllocs()
	for b.Loop() {
		if !p.Check(in).Allowed() {
			b.Fatal("refused")
		}
	}
}

func BenchmarkCheckGroup(b *testing.B) {
	p, _ := New(map[Account]Config{{"discord", "default"}: {Groups: map[string]GroupRule{"g1": {}, "c9": {}}}}, Options{})
	in := thread("c1", "t1", "u1")
	b.ReportAllocs()
	for b.Loop() {
		if !p.Check(in).Allowed() {
			b.Fatal("refused")
		}
	}
}
