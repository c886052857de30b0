// Package partnerapi is foodsafe-sync's client of the partner API: requests as
// the spec's client rules ask (the key only in the Authorization header, an
// X-Request-ID on every request, pacing by the budget's headers, the
// retries each status allows), downloads of signed URLs, and the resources
// as the API sends them. It knows nothing of the mirror it feeds.
package partnerapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	mrand "math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Client talks to the partner API the way the spec asks clients to: the
// key only in the Authorization header, an X-Request-ID on every request,
// pacing by the X-RateLimit-* headers, Retry-After on 429, exponential
// backoff with full jitter on 503 (and on 502 and 504, which a proxy in
// front of the service answers while it restarts) and on a server that
// cannot be reached, one retry on 500; no retry of any other status (a
// 4xx, or a 501 or 505, would be answered the same way again).
type Client struct {
	base *url.URL
	key  string
	http *http.Client
	log  *slog.Logger
	// Persistent makes 503s and unreachable servers retried forever
	// (--every); otherwise MaxTransient attempts (--once).
	Persistent   bool
	MaxTransient int
	BackoffBase  time.Duration
	BackoffCap   time.Duration
	// OnWait is told about every pause (pacing, 429, backoff), for the
	// progress display.
	OnWait func(reason string, d time.Duration)

	budget budget
	mu     sync.Mutex
	stats  Stats
}

// Stats counts what the client did.
type Stats struct {
	Requests    int64 `json:"requests"`     // API requests sent (retries included)
	RateLimited int64 `json:"rateLimited"`  // 429 answers
	Unavailable int64 `json:"unavailable"`  // 503 answers and unreachable servers
	ServerError int64 `json:"serverErrors"` // 500 answers
	Downloads   int64 `json:"downloads"`    // signed-URL downloads (not API requests)
	// BodyBytes counts the API answers' bodies as read, after the
	// transport undid any compression: at least what crossed the wire.
	BodyBytes int64 `json:"bodyBytes"`
}

// Since is what the counters added after before.
func (s Stats) Since(before Stats) Stats {
	return Stats{Requests: s.Requests - before.Requests, RateLimited: s.RateLimited - before.RateLimited,
		Unavailable: s.Unavailable - before.Unavailable, ServerError: s.ServerError - before.ServerError,
		Downloads: s.Downloads - before.Downloads, BodyBytes: s.BodyBytes - before.BodyBytes}
}

// APIError is an answer the client gives up on: a problem document from
// the server, or a failure after its retries.
type APIError struct {
	Status    int
	Type      string // problem type suffix (invalid-request, ...)
	Detail    string
	RequestID string
	Path      string
}

func (e *APIError) Error() string {
	msg := fmt.Sprintf("GET %s: %d", e.Path, e.Status)
	if e.Type != "" {
		msg += " " + e.Type
	}
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg + " (requestId " + e.RequestID + ")"
}

// IsStatus reports whether err is an APIError with that status.
func IsStatus(err error, status int) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Status == status
}

// NewClient builds a client for the API at base with the key.
func NewClient(base, key string, log *slog.Logger) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(base, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--api %q: give the service's base URL, e.g. https://api.example.com", base)
	}
	if u.User != nil || u.RawQuery != "" {
		return nil, fmt.Errorf("--api: the URL must carry neither credentials nor a query")
	}
	for _, r := range key {
		if r <= ' ' || r > '~' {
			// Not echoed: it is (part of) a secret.
			return nil, fmt.Errorf("%s holds a character no API key has (a space, a control character or non-ASCII)", "FOODSAFE_API_KEY")
		}
	}
	return &Client{
		base: u,
		key:  key,
		log:  log,
		http: &http.Client{
			Timeout: 2 * time.Minute,
			// The key goes to the API's own URLs only: never follow a
			// redirect with it.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		MaxTransient: 8,
		BackoffBase:  500 * time.Millisecond,
		BackoffCap:   30 * time.Second,
	}, nil
}

// Stats returns a copy of the counters.
func (c *Client) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

// Budget is the last known request budget: remaining of limit (0, 0 when
// unknown).
func (c *Client) Budget() (remaining, limit int) { return c.budget.get() }

func (c *Client) count(f func(*Stats)) {
	c.mu.Lock()
	f(&c.stats)
	c.mu.Unlock()
}

// Get reads path (with query q) into out, retrying as the spec's client
// rules say (see Client): each attempt is paced, sent, and its answer
// either decoded or turned into a wait before the next attempt.
func (c *Client) Get(ctx context.Context, path string, q url.Values, out any) error {
	_, _, err := c.get(ctx, path, q, "", out)
	return err
}

// GetIfNoneMatch is Get conditional on an entity tag the caller kept
// with an earlier answer (RFC 9110 13.1.2): notModified when the server
// answers 304 (out is untouched: what was kept is current), else out
// holds the answer and tag is its ETag ("" when it has none). An empty
// etag makes it Get that also returns the tag.
func (c *Client) GetIfNoneMatch(ctx context.Context, path string, q url.Values, etag string, out any) (tag string, notModified bool, err error) {
	return c.get(ctx, path, q, etag, out)
}

func (c *Client) get(ctx context.Context, path string, q url.Values, etag string, out any) (string, bool, error) {
	u := *c.base
	u.Path = c.base.Path + path
	u.RawQuery = q.Encode()
	var tries attempts
	for {
		if err := c.pace(ctx); err != nil {
			return "", false, err
		}
		rid := requestID()
		status, hdr, body, err := c.send(ctx, u.String(), rid, etag)
		var reason string
		var wait time.Duration
		switch {
		case err != nil && ctx.Err() != nil:
			return "", false, ctx.Err()
		case err != nil:
			reason, wait, err = c.unreachable(&tries, path, rid, err)
		case status == http.StatusNotModified && etag != "":
			c.budget.note(hdr)
			return etag, true, nil
		case status == http.StatusOK:
			c.budget.note(hdr)
			if err := json.Unmarshal(body, out); err != nil {
				return "", false, fmt.Errorf("GET %s: the answer is not the expected JSON: %v (requestId %s)", path, err, rid)
			}
			return hdr.Get("ETag"), false, nil
		default:
			c.budget.note(hdr)
			reason, wait, err = c.refused(&tries, path, rid, status, hdr, body)
		}
		if err != nil {
			return "", false, err
		}
		if err := c.sleep(ctx, reason, wait); err != nil {
			return "", false, err
		}
	}
}

// attempts counts one request's failed attempts by kind.
type attempts struct {
	transient    int // 502, 503, 504 and unreachable
	serverErrors int // 500
}

// unreachable decides what follows an attempt that got no answer (the
// server restarting, the network): a backoff as for a 503, or giving up
// after MaxTransient of them (never when Persistent).
func (c *Client) unreachable(tries *attempts, path, rid string, err error) (string, time.Duration, error) {
	c.count(func(s *Stats) { s.Unavailable++ })
	tries.transient++
	if !c.Persistent && tries.transient >= c.MaxTransient {
		return "", 0, fmt.Errorf("GET %s: %w (requestId %s; gave up after %d attempts)", path, err, rid, tries.transient)
	}
	c.log.Warn("server unreachable; backing off", "path", path, "requestId", rid, "error", err.Error(), "attempt", tries.transient)
	return "unreachable", c.backoff(tries.transient, 0), nil
}

// refused decides what follows an answer other than 200: the wait before
// the next attempt (429, 502/503/504, a first 500), or the *APIError the
// request ends with.
func (c *Client) refused(tries *attempts, path, rid string, status int, hdr http.Header, body []byte) (string, time.Duration, error) {
	switch status {
	case http.StatusTooManyRequests:
		c.count(func(s *Stats) { s.RateLimited++ })
		wait := retryAfter(hdr, time.Second)
		c.log.Warn("rate limited; waiting Retry-After", "path", path, "requestId", rid, "wait", wait.String())
		return "429 Retry-After", wait, nil
	case http.StatusServiceUnavailable, http.StatusBadGateway, http.StatusGatewayTimeout:
		c.count(func(s *Stats) { s.Unavailable++ })
		tries.transient++
		if !c.Persistent && tries.transient >= c.MaxTransient {
			return "", 0, fmt.Errorf("%w; gave up after %d attempts", problemOf(status, body, rid, path), tries.transient)
		}
		c.log.Warn("service unavailable; backing off", "path", path, "requestId", rid, "status", status, "attempt", tries.transient)
		return fmt.Sprintf("%d backoff", status), c.backoff(tries.transient, retryAfter(hdr, 0)), nil
	case http.StatusInternalServerError:
		c.count(func(s *Stats) { s.ServerError++ })
		tries.serverErrors++
		if tries.serverErrors > 1 {
			return "", 0, problemOf(status, body, rid, path)
		}
		c.log.Warn("server error; retrying once", "path", path, "requestId", rid, "status", status)
		return "500 retry", c.backoff(1, 0), nil
	}
	if status >= 500 {
		c.count(func(s *Stats) { s.ServerError++ })
	}
	return "", 0, problemOf(status, body, rid, path)
}

// send makes one request and reads the whole answer.
func (c *Client) send(ctx context.Context, u, rid, etag string) (int, http.Header, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("X-Request-ID", rid)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "foodsafe-sync")
	if etag != "" {
		req.Header.Set("If-None-Match", etag)
	}
	c.count(func(s *Stats) { s.Requests++ })
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	c.count(func(s *Stats) { s.BodyBytes += int64(len(body)) })
	if err != nil {
		return 0, nil, nil, err
	}
	return resp.StatusCode, resp.Header, body, nil
}

// problemOf reads a problem document (whatever the body, the status and
// request id are kept).
func problemOf(status int, body []byte, rid, path string) *APIError {
	var p struct {
		Type, Detail, RequestID string
	}
	_ = json.Unmarshal(body, &p)
	if p.RequestID != "" {
		rid = p.RequestID
	}
	suffix := p.Type
	if i := strings.LastIndex(suffix, "/problems/"); i >= 0 {
		suffix = suffix[i+len("/problems/"):]
	}
	return &APIError{Status: status, Type: suffix, Detail: p.Detail, RequestID: rid, Path: path}
}

// pace waits before a request so the budget is never exceeded (see
// budget.wait).
func (c *Client) pace(ctx context.Context) error {
	wait, spent := c.budget.wait()
	if wait <= 0 {
		return nil
	}
	if err := c.sleep(ctx, "pacing", wait); err != nil {
		return err
	}
	if spent {
		c.budget.reset() // the window has reset; the next answer tells the new budget
	}
	return nil
}

// backoff is exponential backoff with full jitter (attempt 1 is the
// first retry), capped, and never shorter than the server's Retry-After.
func (c *Client) backoff(attempt int, atLeast time.Duration) time.Duration {
	ceiling := float64(c.BackoffBase) * math.Pow(2, float64(attempt-1))
	if ceiling > float64(c.BackoffCap) {
		ceiling = float64(c.BackoffCap)
	}
	d := time.Duration(mrand.Int64N(int64(ceiling) + 1))
	if d < atLeast {
		d = atLeast
	}
	return d
}

// maxWait caps any single pause: a Retry-After or X-RateLimit-Reset
// beyond it is a server's mistake, not a reason to sleep for days (the
// request then meets the server's answer again).
const maxWait = 5 * time.Minute

// sleep waits d (at most maxWait) or until ctx ends.
func (c *Client) sleep(ctx context.Context, reason string, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	d = min(d, maxWait)
	if c.OnWait != nil {
		c.OnWait(reason, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// retryAfter reads Retry-After in seconds (def when absent or malformed).
func retryAfter(h http.Header, def time.Duration) time.Duration {
	s, err := strconv.Atoi(strings.TrimSpace(h.Get("Retry-After")))
	if err != nil || s < 0 {
		return def
	}
	return time.Duration(s) * time.Second
}

// requestID is a fresh X-Request-ID.
func requestID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "sync-" + hex.EncodeToString(b[:])
}
