// Package cursor owns every pagination cursor of the service: collection
// walks and their changesCursors, the delivery list, deliveries in receive
// order, and the key-wide listing of changed streams. A cursor is a
// position plus the request parameters it is bound to, HMAC-SHA256-signed
// with a server key and base64url-encoded (Codec). Clients cannot forge,
// edit or reuse a cursor with other parameters, and servers sharing the
// key accept each other's cursors. Issuer knows each kind: what it carries
// and is bound to, how long it lasts, which positions are valid, and the
// one 400 that refuses it, so every face of the service (REST routes, MCP
// tools) pages the same way and a cursor issued by one works in another.
//
// Clients keep changes cursors for months: the sealed layout (the
// envelope, each kind's name and each position's JSON) never changes
// (golden_test.go).
package cursor

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"time"
)

const (
	version = 1
	macLen  = sha256.Size
)

// Errors returned by Open; callers turn them into 400 invalid-request.
var (
	// ErrMalformed: not a cursor this service issued (garbage, truncated,
	// tampered, signed with another key).
	ErrMalformed = errors.New("cursor is malformed or was altered")
	// ErrMismatch: a genuine cursor used with other parameters.
	ErrMismatch = errors.New("cursor was issued for other parameters")
	// ErrExpired: a genuine cursor past its lifetime.
	ErrExpired = errors.New("cursor has expired")
)

// Codec seals and opens cursors with one key.
type Codec struct {
	key []byte
	now func() time.Time
}

// New makes a codec; now may be nil (time.Now).
func New(key []byte, now func() time.Time) *Codec {
	if now == nil {
		now = time.Now
	}
	return &Codec{key: slices.Clone(key), now: now}
}

// envelope is the signed content. Short JSON names keep cursors compact.
type envelope struct {
	V    int             `json:"v"`
	Kind string          `json:"k"`
	Bind []string        `json:"b"`
	Exp  int64           `json:"e,omitempty"`
	Pos  json.RawMessage `json:"p"`
}

// Seal encodes pos for the given kind and binding. A positive ttl makes the
// cursor expire.
func (c *Codec) Seal(kind string, bind []string, pos any, ttl time.Duration) (string, error) {
	var exp int64
	if ttl > 0 {
		exp = c.now().Add(ttl).Unix()
	}
	return c.seal(kind, bind, pos, exp)
}

func (c *Codec) seal(kind string, bind []string, pos any, exp int64) (string, error) {
	p, err := json.Marshal(pos)
	if err != nil {
		return "", err
	}
	body, err := json.Marshal(envelope{V: version, Kind: kind, Bind: bind, Exp: exp, Pos: p})
	if err != nil {
		return "", err
	}
	m := hmac.New(sha256.New, c.key)
	m.Write(body)
	return base64.RawURLEncoding.EncodeToString(m.Sum(body)), nil
}

// SealUntil encodes pos like Seal, valid until exp (which must be in the
// future to be of use): for cursors whose lifetime is set by something
// other than their own issue, like every page of one walk.
func (c *Codec) SealUntil(kind string, bind []string, pos any, exp time.Time) (string, error) {
	return c.seal(kind, bind, pos, max(exp.Unix(), 1))
}

// Now is the codec's clock, which decides expiry.
func (c *Codec) Now() time.Time { return c.now() }

// Expires verifies token and returns when it expires (the zero time for a
// cursor that never does).
func (c *Codec) Expires(token string) (time.Time, error) {
	env, err := c.verify(token)
	if err != nil || env.Exp == 0 {
		return time.Time{}, err
	}
	return time.Unix(env.Exp, 0), nil
}

// Open verifies token and decodes its position into pos. The signature is
// checked before anything else is trusted; then kind and binding must match
// exactly, then the lifetime.
func (c *Codec) Open(token, kind string, bind []string, pos any) error {
	env, err := c.verify(token)
	if err != nil {
		return err
	}
	if env.Kind != kind || !slices.Equal(env.Bind, bind) {
		return ErrMismatch
	}
	if env.Exp != 0 && c.now().Unix() >= env.Exp {
		return ErrExpired
	}
	if err := json.Unmarshal(env.Pos, pos); err != nil {
		return ErrMalformed
	}
	// Signed is not trusted: a position is input like any other (a leaked
	// or mishandled cursor key signs anything), so it is checked for type,
	// range and characters before it reaches SQL.
	if v, ok := pos.(Position); ok && !v.Valid() {
		return ErrMalformed
	}
	return nil
}

// Position is a cursor position that can say whether its values are ones
// this service could have issued; Open refuses any other as malformed.
type Position interface {
	Valid() bool
}

// Kind verifies token and returns the kind it was sealed for, so that a
// parameter accepting several kinds of cursor (a walk's nextCursor or
// changesCursor) knows which binding to open it with.
func (c *Codec) Kind(token string) (string, error) {
	env, err := c.verify(token)
	return env.Kind, err
}

// verify checks the signature, then decodes the signed content.
func (c *Codec) verify(token string) (envelope, error) {
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || len(raw) <= macLen {
		return envelope{}, ErrMalformed
	}
	body, sig := raw[:len(raw)-macLen], raw[len(raw)-macLen:]
	m := hmac.New(sha256.New, c.key)
	m.Write(body)
	if !hmac.Equal(sig, m.Sum(nil)) {
		return envelope{}, ErrMalformed
	}
	var env envelope
	if err := json.Unmarshal(body, &env); err != nil || env.V != version {
		return envelope{}, ErrMalformed
	}
	return env, nil
}
