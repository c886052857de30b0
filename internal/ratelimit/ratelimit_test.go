package ratelimit

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"

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
