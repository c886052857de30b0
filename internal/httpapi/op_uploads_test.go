package httpapi

import (
	"testing"
	"time"
)

// The deadline of an upload's next read is the earliest of the idle
// timeout, the minimum rate's (the grace plus a second per minRate bytes
// received, as mod_reqtimeout's MinRate) and the whole upload's end, and
// says which one it is, so a cut is told as idle or slow.
func TestIdleBodyNextDeadline(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b := &idleBody{idle: 30 * time.Second, start: start, end: start.Add(10 * time.Minute), minRate: 1000, grace: 20 * time.Second}
	for _, c := range []struct {
		name       string
		got        int64
		at         time.Duration
		want       time.Duration
		idle, slow bool
	}{
		{"within the grace, the rate's deadline is the grace", 0, 0, 20 * time.Second, false, true},
		{"bytes earn time: 5,000 bytes are 5 s", 5000, 10 * time.Second, 25 * time.Second, false, true},
		{"well ahead of the rate, the idle timeout", 1_000_000, 10 * time.Second, 40 * time.Second, true, false},
		{"past the rate's deadline, it is in the past", 0, 21 * time.Second, 20 * time.Second, false, true},
		{"the whole upload's end comes first", 1_000_000_000, 9*time.Minute + 50*time.Second, 10 * time.Minute, false, false},
	} {
		b.got = c.got
		d, idle, slow := b.next(start.Add(c.at))
		if d != start.Add(c.want) || idle != c.idle || slow != c.slow {
			t.Errorf("%s: deadline %s idle %v slow %v, want %s %v %v", c.name, d.Sub(start), idle, slow, c.want, c.idle, c.slow)
		}
	}
	b.minRate, b.got = 0, 0
	if d, idle, slow := b.next(start); d != start.Add(30*time.Second) || !idle || slow {
		t.Errorf("no minimum rate: deadline %s idle %v slow %v, want the idle timeout", d.Sub(start), idle, slow)
	}
}

// The last reserved slots go only to keys with no upload in progress;
// the per-key and per-process caps hold as before.
func TestUploadSlotsReserve(t *testing.T) {
	s := newUploadSlots(4, 8, 25) // 2 of 8 reserved
	var held []func()
	take := func(key int64) bool {
		release, err := s.acquire(key)
		if err == nil {
			held = append(held, release)
		}
		return err == nil
	}
	for i := range 4 {
		if !take(1) {
			t.Fatalf("key 1's upload %d refused with 8 free", i+1)
		}
	}
	for i := range 2 {
		if !take(2) {
			t.Fatalf("key 2's upload %d refused while more than 2 are free", i+1)
		}
	}
	if take(2) {
		t.Fatal("key 2 took a reserved slot with uploads in progress")
	}
	if !take(3) || !take(4) {
		t.Fatal("a key's first upload refused a reserved slot")
	}
	if take(5) {
		t.Fatal("a ninth upload on eight slots")
	}
	held[0]()
	held[0]() // a second release changes nothing
	if take(2) {
		t.Fatal("key 2 took the one free slot, a reserved one")
	}
	if !take(5) {
		t.Fatal("a key with none in progress refused the free slot")
	}
}
