package ratelimit

import (
	"bytes"
	"encoding/json"
	"log/slog"
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
