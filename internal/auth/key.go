// Package auth defines credentials and what they allow. A partner key is
// `fsk_<public>.<secret>`: the public part names the key in support
// conversations and logs; only a SHA-256 digest of the secret is stored.
// The secret is 32 random bytes, so a plain digest is already infeasible to
// invert and needs no pepper (which would only add a rotation burden).
package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"strings"
)

const (
	// KeyPrefix starts every partner key.
	KeyPrefix = "fsk_"
	// TokenPrefix starts every mobile session token.
	TokenPrefix = "fst_"

	publicIDLen  = 16
	secretBytes  = 32
	minPublicLen = 12
	maxPublicLen = 32
	// secretTextLen is the length of 32 bytes in unpadded base64url.
	secretTextLen = 43
)

// Credential is a parsed bearer credential: a key or a session token share
// the same shape under different prefixes.
type Credential struct {
	Prefix   string
	PublicID string
	secret   string
}

// Digest is the stored form of the credential's secret.
func (c Credential) Digest() []byte { return Digest(c.secret) }

// Digest hashes a secret for storage and comparison.
func Digest(secret string) []byte {
	d := sha256.Sum256([]byte(secret))
	return d[:]
}

// Matches compares the credential's secret with a stored digest in
// constant time.
func (c Credential) Matches(stored []byte) bool {
	return subtle.ConstantTimeCompare(c.Digest(), stored) == 1
}

// Issued is a freshly minted credential: Full is shown once and never stored.
type Issued struct {
	Full     string
	PublicID string
	Digest   []byte
}

// NewKey mints a partner key.
func NewKey() Issued { return mint(KeyPrefix) }

// NewToken mints a mobile session token.
func NewToken() Issued { return mint(TokenPrefix) }

func mint(prefix string) Issued {
	pub := strings.ToLower(rand.Text())[:publicIDLen] // base32: [a-z2-7]
	b := make([]byte, secretBytes)
	_, _ = rand.Read(b) // never fails (crypto/rand contract)
	secret := base64.RawURLEncoding.EncodeToString(b)
	return Issued{Full: prefix + pub + "." + secret, PublicID: pub, Digest: Digest(secret)}
}

// ParseCredential splits a bearer token into prefix, public id and secret,
// rejecting anything not of the exact form we issue.
func ParseCredential(s string) (Credential, bool) {
	var prefix string
	switch {
	case strings.HasPrefix(s, KeyPrefix):
		prefix = KeyPrefix
	case strings.HasPrefix(s, TokenPrefix):
		prefix = TokenPrefix
	default:
		return Credential{}, false
	}
	pub, secret, ok := strings.Cut(s[len(prefix):], ".")
	if !ok || !ValidPublicID(pub) || len(secret) != secretTextLen {
		return Credential{}, false
	}
	for i := 0; i < len(secret); i++ {
		if !isURLSafe(secret[i]) {
			return Credential{}, false
		}
	}
	return Credential{Prefix: prefix, PublicID: pub, secret: secret}, true
}

// ValidPublicID reports whether s has the form of a public id.
func ValidPublicID(s string) bool {
	if len(s) < minPublicLen || len(s) > maxPublicLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

func isURLSafe(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}

// BearerCredential extracts the credential from an Authorization header
// value. The scheme is case-insensitive (RFC 9110 11.1).
func BearerCredential(header string) (string, bool) {
	scheme, cred, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	cred = strings.TrimLeft(cred, " ")
	return cred, cred != ""
}
