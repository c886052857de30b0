package redact_test

import (
	"strings"
	"testing"

	"github.com/foodsafe/foodsafe/internal/auth"
	"github.com/foodsafe/foodsafe/internal/redact"
)

// redact restates auth's credential format as a regular expression (it
// must find credentials inside any text, where auth parses a whole
// bearer value). Every credential auth mints or accepts is redacted, down
// to its public id, wherever it sits in a text.
func TestSecretsRedactsEveryCredentialAuthAccepts(t *testing.T) {
	t.Parallel()
	var creds []string
	for range 20 {
		creds = append(creds, auth.NewKey().Full, auth.NewToken().Full)
	}
	// Every public id length and secret length around what auth accepts,
	// for both prefixes: those it accepts must be redacted.
	accepted := 0
	for _, prefix := range []string{auth.KeyPrefix, auth.TokenPrefix} {
		for pub := 1; pub <= 40; pub++ {
			for _, secret := range []int{42, 43, 44} {
				c := prefix + strings.Repeat("a1", pub)[:pub] + "." + strings.Repeat("Z9_-", secret)[:secret]
				if _, ok := auth.ParseCredential(c); ok {
					creds = append(creds, c)
					accepted++
				}
			}
		}
	}
	if accepted == 0 {
		t.Fatal("auth accepted none of the credentials built; the test built the wrong ones")
	}
	for _, c := range creds {
		parsed, ok := auth.ParseCredential(c)
		if !ok {
			t.Fatalf("auth refuses %q, which it minted", c)
		}
		want := parsed.Prefix + parsed.PublicID + "." + redact.Placeholder
		for _, text := range []string{c, "Bearer " + c, "/v1/x/" + c + "/y", `{"k":"` + c + `"}`} {
			got := redact.Secrets(text)
			if !strings.Contains(got, want) || strings.Contains(got, c) {
				t.Errorf("Secrets(%q) = %q, want the secret replaced: %q", text, got, want)
			}
		}
		if !redact.Contains(c) {
			t.Errorf("Contains(%q) = false", c)
		}
	}
}

// A credential written with percent-escapes (a path net/http refused, as
// sent) is redacted where it stands, escapes and all; the rest of the
// text stays as it was written, invalid escapes included.
func TestSecretsSeesThroughEscapes(t *testing.T) {
	t.Parallel()
	k := auth.NewKey()
	parsed, _ := auth.ParseCredential(k.Full)
	pub, secret := parsed.Prefix+parsed.PublicID, k.Full[len(parsed.Prefix+parsed.PublicID)+1:]
	for in, want := range map[string]string{
		"/v1/" + pub + "%2E" + secret + "/x%zz":                "/v1/" + pub + "%2E" + redact.Placeholder + "/x%zz",
		"/v1/" + pub + "%2e" + secret[:5] + "%41" + secret[5:]: "/v1/" + pub + "%2e" + redact.Placeholder,
		"/v1/%66sk_" + pub[4:] + "." + secret + "?a=%":         "/v1/%66sk_" + pub[4:] + "." + redact.Placeholder + "?a=%",
		"/a%2E" + k.Full + "/" + pub + "%2E" + secret:          "/a%2E" + pub + "." + redact.Placeholder + "/" + pub + "%2E" + redact.Placeholder,
		"/v1/" + pub + "%252E" + secret:                        "/v1/" + pub + "%252E" + secret, // decoded once: no credential
		"100% of /v1/%zz":                                      "100% of /v1/%zz",
	} {
		got := redact.Secrets(in)
		if got != want {
			t.Errorf("Secrets(%q)\n = %q\nwant %q", in, got, want)
		}
	}
}
