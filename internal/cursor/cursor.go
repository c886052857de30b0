// Package cursor owns every pagination cursor of the service: collection
// walks and their changesCursors, the delivery list, deliveries in receive
// order, and the key-wide listing of changed streams. A cursor is a
// position plus the request parameters it is bound to, encrypted and
// authenticated with keys derived from the server's cursor key, and
// base64url-encoded (Codec). Clients cannot read, forge, edit or reuse a
// cursor with other parameters, and servers sharing the key accept each
// other's cursors. Issuer knows each kind: what it carries and is bound
// to, how long it lasts, which positions are valid, and the one 400 that
// refuses it, so every face of the service (REST routes, MCP tools) pages
// the same way and a cursor issued by one works in another.
//
// Positions are opaque: a changes cursor names database snapshots (the
// cluster's transaction ids), which would tell any partner the platform's
// total write rate if they were readable. Cursors sealed before
// encryption (signed only) still open; new ones are never issued so.
//
// Clients keep changes cursors for months: the sealed layouts (both
// envelopes, each kind's name and each position's JSON) never change
// (golden_test.go).
package cursor

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"time"
)

const (
	// signedVersion: the envelope of cursors sealed before encryption, in
	// clear, followed by its HMAC-SHA256 under the cursor key itself.
	signedVersion = 1
	// sealedVersion: one version byte, a 16-byte synthetic IV, then the
	// envelope encrypted with AES-256-CTR under that IV.
	sealedVersion = 2
	macLen        = sha256.Size
	ivLen         = aes.BlockSize
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
	// signKey opens cursors sealed before encryption.
	signKey []byte
	// block encrypts, ivKey makes the synthetic IV that also authenticates
	// (SIV: a cursor is deterministic, so the same position seals to the
	// same bytes on every replica, and any change to it is detected).
	block cipher.Block
	ivKey []byte
	now   func() time.Time
}

// New makes a codec; now may be nil (time.Now). The encryption and
// authentication keys are derived from key with HKDF-SHA256, each for its
// own purpose, so the configured key is never used for two.
func New(key []byte, now func() time.Time) *Codec {
	if now == nil {
		now = time.Now
	}
	derive := func(purpose string) []byte {
		k, err := hkdf.Key(sha256.New, key, nil, "foodsafe cursor "+purpose, 32)
		if err != nil {
			panic("cursor: " + err.Error()) // only for lengths HKDF cannot produce
		}
		return k
	}
	block, err := aes.NewCipher(derive("encryption"))
	if err != nil {
		panic("cursor: " + err.Error()) // a 32-byte key always makes a cipher
	}
	return &Codec{signKey: slices.Clone(key), block: block, ivKey: derive("authentication"), now: now}
}

// envelope is the sealed content. Short JSON names keep cursors compact.
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
	body, err := json.Marshal(envelope{V: sealedVersion, Kind: kind, Bind: bind, Exp: exp, Pos: p})
	if err != nil {
		return "", err
	}
	out := make([]byte, 1+ivLen+len(body))
	out[0] = sealedVersion
	iv := c.syntheticIV(body)
	copy(out[1:], iv)
	cipher.NewCTR(c.block, iv).XORKeyStream(out[1+ivLen:], body)
	return base64.RawURLEncoding.EncodeToString(out), nil
}

// syntheticIV is the IV of body: the first 16 bytes of its HMAC, which
// opening recomputes from the decrypted body to authenticate it.
func (c *Codec) syntheticIV(body []byte) []byte {
	m := hmac.New(sha256.New, c.ivKey)
	m.Write([]byte{sealedVersion})
	m.Write(body)
	return m.Sum(nil)[:ivLen]
}

// SealUntil encodes pos like Seal, valid until exp (which must be in the
// future to be of use): for cursors whose lifetime is set by something
// other than their own issue, like every page of one walk.
func (c *Codec) SealUntil(kind string, bind []string, pos any, exp time.Time) (string, error) {
	return c.seal(kind, bind, pos, max(exp.Unix(), 1))
}

// Now is the codec's clock, which decides expiry.
func (c *Codec) Now() time.Time { return c.now() }

// Sealed is a cursor whose origin was verified and whose envelope was
// decoded, once: a request that must know a cursor's kind or lifetime
// before its position reads it from here rather than decoding it again.
type Sealed struct {
	env envelope
}

// Kind is the kind the cursor was sealed for.
func (s Sealed) Kind() string { return s.env.Kind }

// Expires is when the cursor expires (the zero time for one that never
// does).
func (s Sealed) Expires() time.Time {
	if s.env.Exp == 0 {
		return time.Time{}
	}
	return time.Unix(s.env.Exp, 0)
}

// Open verifies token and decodes its position into pos (Unseal, then
// Decode).
func (c *Codec) Open(token, kind string, bind []string, pos any) error {
	s, err := c.Unseal(token)
	if err != nil {
		return err
	}
	return c.Decode(s, kind, bind, pos)
}

// Decode reads the position of a verified cursor into pos: kind and
// binding must match exactly, then the lifetime, then the position must be
// one the service could have issued.
func (c *Codec) Decode(s Sealed, kind string, bind []string, pos any) error {
	if s.env.Kind != kind || !slices.Equal(s.env.Bind, bind) {
		return ErrMismatch
	}
	if s.env.Exp != 0 && c.now().Unix() >= s.env.Exp {
		return ErrExpired
	}
	if err := json.Unmarshal(s.env.Pos, pos); err != nil {
		return ErrMalformed
	}
	// Authentic is not trusted: a position is input like any other (a
	// leaked or mishandled cursor key seals anything), so it is checked
	// for type, range and characters before it reaches SQL.
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

// Unseal verifies token's origin and decodes its envelope: an encrypted
// cursor is decrypted and its synthetic IV recomputed; one sealed before
// encryption has its signature checked. Nothing in it is trusted before.
func (c *Codec) Unseal(token string) (Sealed, error) {
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || len(raw) == 0 {
		return Sealed{}, ErrMalformed
	}
	var body []byte
	version := signedVersion
	if raw[0] == sealedVersion {
		version, body = sealedVersion, c.decrypt(raw[1:])
	} else {
		body = c.verifySigned(raw)
	}
	var env envelope
	if body == nil || json.Unmarshal(body, &env) != nil || env.V != version {
		return Sealed{}, ErrMalformed
	}
	return Sealed{env: env}, nil
}

// decrypt opens iv+ciphertext, or returns nil when it was not sealed with
// this codec's keys.
func (c *Codec) decrypt(sealed []byte) []byte {
	if len(sealed) <= ivLen {
		return nil
	}
	iv, body := sealed[:ivLen], make([]byte, len(sealed)-ivLen)
	cipher.NewCTR(c.block, iv).XORKeyStream(body, sealed[ivLen:])
	if !hmac.Equal(iv, c.syntheticIV(body)) {
		return nil
	}
	return body
}

// verifySigned checks a cursor sealed before encryption: its body, or nil
// when the signature does not hold.
func (c *Codec) verifySigned(raw []byte) []byte {
	if len(raw) <= macLen {
		return nil
	}
	body, sig := raw[:len(raw)-macLen], raw[len(raw)-macLen:]
	m := hmac.New(sha256.New, c.signKey)
	m.Write(body)
	if !hmac.Equal(sig, m.Sum(nil)) {
		return nil
	}
	return body
}
