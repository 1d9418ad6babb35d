package stack

import "testing"

// deep recurses depth times through a frame of about 1 KB.
//
//go:noinline
func deep(depth int) int {
	var frame [1 << 10]byte
	frame[depth%len(frame)] = byte(depth)
	if depth == 0 {
		return int(frame[0])
	}
	return deep(depth-1) + int(frame[depth%len(frame)])
}

// TestReserveThenDeepCalls: a goroutine that reserved runs calls as deep
// as a turn's and returns their result.
func TestReserveThenDeepCalls(t *testing.T) {
	got := make(chan int)
	go func() {
		Reserve()
		got <- deep(48)
	}()
	if v, want := <-got, deep(48); v != want {
		t.Fatalf("deep calls after Reserve = %d, want %d", v, want)
	}
}

// BenchmarkGoroutine is a new goroutine that goes about 48 KB deep, as a
// turn does, with and without Reserve first.
func BenchmarkGoroutine(b *testing.B) {
	for _, reserve := range []bool{false, true} {
		name := "grow"
		if reserve {
			name = "reserve"
		}
		b.Run(name, func(b *testing.B) {
			done := make(chan int)
			for b.Loop() {
				go func() {
					if reserve {
						Reserve()
					}
					done <- deep(48)
				}()
				<-done
			}
		})
	}
}
