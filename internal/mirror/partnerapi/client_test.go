package partnerapi

import (
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"
)

// Backoff stays within [atLeast, the attempt's capped ceiling].
func TestBackoffBounds(t *testing.T) {
	c := &Client{BackoffBase: 500 * time.Millisecond, BackoffCap: 30 * time.Second}
	for attempt := 1; attempt <= 12; attempt++ {
		ceiling := min(500*time.Millisecond<<(attempt-1), 30*time.Second)
		for range 200 {
			d := c.backoff(attempt, 0)
			if d < 0 || d > ceiling {
				t.Fatalf("attempt %d: %s outside [0, %s]", attempt, d, ceiling)
			}
			if d := c.backoff(attempt, 45*time.Second); d != 45*time.Second {
				t.Fatalf("attempt %d: %s shorter than Retry-After 45s or longer", attempt, d)
			}
		}
	}
}

func TestRetryAfter(t *testing.T) {
	h := http.Header{}
	if got := retryAfter(h, time.Second); got != time.Second {
		t.Errorf("absent: %s", got)
	}
	h.Set("Retry-After", "7")
	if got := retryAfter(h, time.Second); got != 7*time.Second {
		t.Errorf("7: %s", got)
	}
	h.Set("Retry-After", "Wed, 21 Oct 2026 07:28:00 GMT")
	if got := retryAfter(h, 2*time.Second); got != 2*time.Second {
		t.Errorf("a date is not understood; the default holds: %s", got)
	}
}

func TestNewClientRefusesCredentialsInURL(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, u := range []string{"ftp://h", "http://", "http://user:pw@h", "http://h/?x=1", "not a url"} {
		if _, err := NewClient(u, "k", log); err == nil {
			t.Errorf("NewClient(%q) accepted", u)
		}
	}
	if _, err := NewClient("https://api.example.com/", "k", log); err != nil {
		t.Errorf("a plain base URL: %v", err)
	}
}
