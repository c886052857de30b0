package ratelimit

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// go-redis's own log lines go through the service's JSON logger, not as
// plain text to stderr.
func TestRedisClientLogsThroughSlog(t *testing.T) {
	var buf syncBuffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	l, err := New(10, "redis://127.0.0.1:1/0", "test", log, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// An option go-redis corrects with a log line: a deterministic way to
	// make it log.
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ClientSideCacheStrategy: 99})
	defer c.Close()
	out := strings.TrimSpace(buf.String())
	if !strings.Contains(out, "ClientSideCacheStrategy") {
		t.Fatalf("go-redis did not log through slog; got %q", out)
	}
	for _, line := range strings.Split(out, "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not a JSON log line: %q", line)
		}
		if m["component"] != "redis" {
			t.Fatalf("line without component=redis: %q", line)
		}
	}
}

// Spent tells a bucket with nothing left from one with a request left,
// without counting: peeking never spends the budget. In memory, and in
// Redis when one answers (TEST_REDIS_URL, default 127.0.0.1:6379).
func TestSpentCountsNothing(t *testing.T) {
	redisURL := os.Getenv("TEST_REDIS_URL")
	if redisURL == "" {
		redisURL = "redis://127.0.0.1:6379/0"
	}
	for _, url := range []string{"", redisURL} {
		l, err := New(3, url, "spent-test-"+rand.Text(), slog.New(slog.DiscardHandler), nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		for range 10 {
			if r := l.Spent(ctx, "b"); r.Reached || r.Remaining != 3 {
				t.Fatalf("redis %q: a fresh bucket is not spent, and peeking counts nothing: %+v", url, r)
			}
		}
		for i := range 3 {
			if r := l.Spent(ctx, "b"); r.Reached {
				t.Fatalf("redis %q: spent after %d of 3", url, i)
			}
			l.Take(ctx, "b")
		}
		if r := l.Spent(ctx, "b"); !r.Reached || r.Remaining != 0 {
			t.Fatalf("redis %q: 3 of 3 taken is spent: %+v", url, r)
		}
		if url != "" && l.Backend() != "redis" {
			t.Fatalf("the Redis at %s did not answer; the test needs one", url)
		}
		_ = l.Close()
	}
}

func testRedis() string {
	if u := os.Getenv("TEST_REDIS_URL"); u != "" {
		return u
	}
	return "redis://127.0.0.1:6379/0"
}

// Reset is never before the window really ends: a window opened after
// `before` ends at before plus a minute or later, and the store gives its
// end truncated to the second (up to a second early). Reset is at most a
// second late, and never beyond a minute from the answer.
func TestResetIsNeverEarly(t *testing.T) {
	for _, url := range []string{"", testRedis()} {
		l, err := New(5, url, "reset-test-"+rand.Text(), slog.New(slog.DiscardHandler), nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		for i := range 5 {
			before := time.Now()
			r := l.Take(ctx, "b"+strconv.Itoa(i))
			after := time.Now()
			if r.Reset.Before(before.Add(time.Minute)) {
				t.Fatalf("redis %q: the window opened after %v ends after %v, but Reset says %v",
					url, before, before.Add(time.Minute), r.Reset)
			}
			if r.Reset.After(after.Add(time.Minute)) || r.Reset.Sub(before.Add(time.Minute)) > time.Second+after.Sub(before) {
				t.Fatalf("redis %q: Reset %v is more than a second late (window opened in [%v, %v])", url, r.Reset, before, after)
			}
		}
		_ = l.Close()
	}
}

// TakeMore counts a request's whole cost or none of it: refused, the
// budget left stays for smaller requests.
func TestTakeMoreIsWholeOrNothing(t *testing.T) {
	for _, url := range []string{"", testRedis()} {
		l, err := New(10, url, "more-test-"+rand.Text(), slog.New(slog.DiscardHandler), nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		l.Take(ctx, "b")
		if r := l.TakeMore(ctx, "b", 6); r.Reached || r.Remaining != 3 {
			t.Fatalf("redis %q: 1+6 of 10 leaves 3: %+v", url, r)
		}
		if r := l.TakeMore(ctx, "b", 4); !r.Reached || r.Counted {
			t.Fatalf("redis %q: 4 more with 3 left is refused: %+v", url, r)
		}
		if r := l.Spent(ctx, "b"); r.Remaining != 3 {
			t.Fatalf("redis %q: a refused TakeMore counts nothing: %+v", url, r)
		}
		if r := l.TakeMore(ctx, "b", 3); r.Reached || r.Remaining != 0 || !r.Counted {
			t.Fatalf("redis %q: exactly what is left is admitted: %+v", url, r)
		}
		if url != "" && l.Backend() != "redis" {
			t.Fatalf("the Redis at %s did not answer; the test needs one", url)
		}
		_ = l.Close()
	}
}
