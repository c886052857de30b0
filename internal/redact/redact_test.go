package redact

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

const key = "fsk_abcdefghijklmnop.QmFzZTY0U2VjcmV0SGFsZk9mVGhlS2V5MDEyMzQ1Njc4"

func TestSecrets(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"/v1/restaurants/" + key + "/deliveries": "/v1/restaurants/fsk_abcdefghijklmnop.[redacted]/deliveries",
		"Bearer " + key:                          "Bearer fsk_abcdefghijklmnop.[redacted]",
		"fst_0123456789ab.x":                     "fst_0123456789ab.[redacted]",
		"no credential here":                     "no credential here",
		"fsk_short.secret":                       "fsk_short.secret", // not a public id: not a credential
	} {
		if got := Secrets(in); got != want {
			t.Errorf("Secrets(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestHandlerRedactsEverything(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := slog.New(Handler(slog.NewJSONHandler(&buf, nil))).With("path", "/x/"+key)
	log.Info("saw "+key, "request_id", key, "error", errors.New("bad "+key), slog.Group("g", "inner", key))
	out := buf.String()
	if strings.Contains(out, "QmFzZTY0") {
		t.Fatalf("secret in log line: %s", out)
	}
	if got := strings.Count(out, "fsk_abcdefghijklmnop.[redacted]"); got != 5 {
		t.Fatalf("want 5 redacted credentials, got %d: %s", got, out)
	}
}
