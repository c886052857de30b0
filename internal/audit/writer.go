// Package audit records who called what, off the request path. Requests
// hand events to a bounded buffer; one goroutine writes them in batches
// (COPY) every FlushInterval or BatchSize events, and Close drains the
// buffer during graceful shutdown. Requests that reach no key's data are
// counted by shape instead (Count): one row per minute and shape, however
// many requests, written on the same schedule.
//
// When the buffer is full (the database has been unreachable for a while)
// new events are dropped and counted rather than blocking requests: the
// service keeps serving, and the drop count is logged on every failed or
// successful flush until it is reported.
//
// Counts are bounded in rows as well as in memory, whatever the number of
// clients: each minute, the first Options.MaxRows-1 shapes written (the
// heaviest first at each flush) keep their client, route and outcome by
// name, and every other request of the minute is counted in one row of
// the rest (RestShape). Nothing is dropped for it.
package audit

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/foodsafe/foodsafe/internal/metrics"
	"github.com/foodsafe/foodsafe/internal/redact"
)

// Event is one audited request. It never holds a secret: Record passes
// every text field through the redactor, whoever filled it.
type Event struct {
	At           time.Time
	KeyPublicID  string
	RestaurantID string
	Method       string
	Route        string
	Status       int
	RequestID    string
	ClientIP     netip.Addr
	// Outcome explains a refusal (auth failure reason, rate-limited).
	Outcome string
}

// Shape is what requests audited by shape have in common: the minute
// they ended in, the client, the request and the answer. Count redacts
// its text and puts its method in a closed set, so the shapes a client
// can make are few.
type Shape struct {
	Minute time.Time
	// Client is the client's address prefix (internal/clientip: an
	// address, an IPv6 /64), so a client changing addresses within it is
	// one client; invalid when no address was known.
	Client      netip.Prefix
	Method      string
	Route       string
	Status      int
	Outcome     string
	KeyPublicID string
}

// RestRoute is the route of a minute's row of the rest (RestShape).
const RestRoute = "(others)"

// RestShape is the shape of a minute's row of the rest: the requests of
// that minute beyond its named rows (Options.MaxRows), from any client
// (::/0), to any route.
func RestShape(minute time.Time) Shape {
	return Shape{Minute: minute, Client: netip.PrefixFrom(netip.IPv6Unspecified(), 0), Method: "other", Route: RestRoute}
}

func (s Shape) isRest() bool { return s == RestShape(s.Minute) }

// ShapeCount is a shape with the number of requests counted under it.
type ShapeCount struct {
	Shape
	Requests int64
}

// CountSink adds a flush of counted shapes to what is stored (each shape
// once per call).
type CountSink func(ctx context.Context, counts []ShapeCount) error

// Sink persists a batch of events. It wraps ErrRejected when the database
// refused the batch's data: retrying it cannot succeed.
type Sink func(ctx context.Context, events []Event) error

// ErrRejected marks a batch the database will never accept.
var ErrRejected = errors.New("audit batch rejected")

// Options tune the writer.
type Options struct {
	FlushInterval time.Duration
	BatchSize     int
	BufferSize    int
	// Metrics counts written and dropped events and times batches; nil
	// records nothing.
	Metrics *metrics.Metrics
	// Counts stores counted shapes; nil drops them.
	Counts CountSink
	// MaxShapes bounds the shapes held between flushes (default 10000);
	// a request of a new shape beyond it is counted in its minute's row
	// of the rest.
	MaxShapes int
	// MaxRows bounds the rows of counts written per minute (default 100):
	// MaxRows-1 named shapes and the row of the rest (RestShape).
	MaxRows int
}

// Writer batches events to a Sink.
type Writer struct {
	sink    Sink
	log     *slog.Logger
	opts    Options
	ch      chan Event
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
	dropped atomic.Int64
	// pending is the size of the batch the loop is building, for Buffered.
	pending atomic.Int64
	// failing is set after a failed flush: size-triggered flushes wait for
	// the next tick instead of hammering an unavailable database.
	failing bool

	// shapes are the requests counted since the last flush of counts;
	// rest, by minute, those of new shapes beyond MaxShapes.
	smu    sync.Mutex
	shapes map[Shape]int64
	rest   map[time.Time]int64
	// named are the shapes written by name, per minute, for the latest
	// namedMinutes minutes; only the loop reads and writes it.
	named map[time.Time]map[Shape]bool
}

// namedMinutes is how many minutes' named shapes are remembered: the
// current one and those whose requests may still be ending.
const namedMinutes = 3

// NewWriter starts the background writer.
func NewWriter(sink Sink, log *slog.Logger, o Options) *Writer {
	if o.BatchSize <= 0 {
		o.BatchSize = 500
	}
	if o.BufferSize <= 0 {
		o.BufferSize = 10000
	}
	if o.FlushInterval <= 0 {
		o.FlushInterval = time.Second
	}
	if o.MaxShapes <= 0 {
		o.MaxShapes = 10000
	}
	if o.MaxRows < 2 {
		o.MaxRows = 100
	}
	w := &Writer{sink: sink, log: log, opts: o,
		ch: make(chan Event, o.BufferSize), stop: make(chan struct{}), done: make(chan struct{})}
	go w.loop()
	return w
}

// Record queues an event without blocking.
func (w *Writer) Record(e Event) {
	e.KeyPublicID, e.RestaurantID, e.Method = redact.Secrets(e.KeyPublicID), redact.Secrets(e.RestaurantID), redact.Secrets(e.Method)
	e.Route, e.RequestID, e.Outcome = redact.Secrets(e.Route), redact.Secrets(e.RequestID), redact.Secrets(e.Outcome)
	select {
	case w.ch <- e:
	default:
		w.dropped.Add(1)
		w.opts.Metrics.AuditDropped(metrics.AuditBufferFull, 1)
	}
}

// Count adds one request to its shape's count, without blocking.
func (w *Writer) Count(s Shape) {
	s.Minute = s.Minute.UTC().Truncate(time.Minute)
	s.Method = closedMethod(s.Method)
	s.Route, s.Outcome, s.KeyPublicID = redact.Secrets(s.Route), redact.Secrets(s.Outcome), redact.Secrets(s.KeyPublicID)
	w.smu.Lock()
	defer w.smu.Unlock()
	if _, ok := w.shapes[s]; !ok && len(w.shapes) >= w.opts.MaxShapes {
		if w.rest == nil {
			w.rest = make(map[time.Time]int64)
		}
		w.rest[s.Minute]++
		return
	}
	if w.shapes == nil {
		w.shapes = make(map[Shape]int64)
	}
	w.shapes[s]++
}

// closedMethod keeps the methods a client may use; any other is "other",
// so a client cannot make a new shape per request by inventing methods.
func closedMethod(m string) string {
	switch m {
	case "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS":
		return m
	}
	return "other"
}

// flushCounts writes the shapes counted since the last flush. Counts that
// could not be written are kept for the next flush while they fit, added
// to what was counted since; beyond, they are dropped and counted.
func (w *Writer) flushCounts() {
	w.smu.Lock()
	shapes, rest := w.shapes, w.rest
	w.shapes, w.rest = nil, nil
	w.smu.Unlock()
	if len(shapes) == 0 && len(rest) == 0 {
		return
	}
	rows := w.rows(shapes, rest)
	var requests int64
	for _, r := range rows {
		requests += r.Requests
	}
	var err error
	if w.opts.Counts != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = w.opts.Counts(ctx, rows)
		cancel()
	}
	if err == nil {
		w.opts.Metrics.AuditCounted(int(requests))
		return
	}
	w.smu.Lock()
	defer w.smu.Unlock()
	if errors.Is(err, ErrRejected) || len(w.shapes)+len(rows) > w.opts.MaxShapes {
		w.opts.Metrics.AuditDropped(metrics.AuditBatchFailed, int(requests))
		w.log.Error("audit counts not written; dropped", "shapes", len(rows), "requests", requests, "error", err)
		return
	}
	w.log.Error("audit counts not written; will retry", "shapes", len(rows), "error", err)
	if w.shapes == nil {
		w.shapes = make(map[Shape]int64, len(rows))
	}
	for _, r := range rows {
		// Named shapes stay named in their minute; rows of the rest are
		// the rest again.
		w.shapes[r.Shape] += r.Requests
	}
}

// rows are the rows a flush writes: each shape by name while its minute
// has room for it (a shape once named stays named for the minute), the
// heaviest first, and one row per minute of the rest.
func (w *Writer) rows(shapes map[Shape]int64, rest map[time.Time]int64) []ShapeCount {
	if rest == nil {
		rest = make(map[time.Time]int64)
	}
	byMinute := map[time.Time][]ShapeCount{}
	for s, n := range shapes {
		if s.isRest() {
			rest[s.Minute] += n
			continue
		}
		byMinute[s.Minute] = append(byMinute[s.Minute], ShapeCount{Shape: s, Requests: n})
	}
	rows := make([]ShapeCount, 0, len(shapes)+len(rest))
	for m, counts := range byMinute {
		sort.SliceStable(counts, func(i, j int) bool { return counts[i].Requests > counts[j].Requests })
		named := w.namedIn(m)
		for _, c := range counts {
			if !named[c.Shape] {
				if len(named) >= w.opts.MaxRows-1 {
					rest[m] += c.Requests
					continue
				}
				named[c.Shape] = true
			}
			rows = append(rows, c)
		}
	}
	for m, n := range rest {
		if n > 0 {
			rows = append(rows, ShapeCount{Shape: RestShape(m), Requests: n})
		}
	}
	return rows
}

// namedIn is the set of shapes named in minute m, forgetting the oldest
// minute's beyond namedMinutes.
func (w *Writer) namedIn(m time.Time) map[Shape]bool {
	if set, ok := w.named[m]; ok {
		return set
	}
	if w.named == nil {
		w.named = make(map[time.Time]map[Shape]bool)
	}
	if len(w.named) >= namedMinutes {
		var oldest time.Time
		for k := range w.named {
			if oldest.IsZero() || k.Before(oldest) {
				oldest = k
			}
		}
		delete(w.named, oldest)
	}
	set := make(map[Shape]bool)
	w.named[m] = set
	return set
}

// Buffered is the number of events held in memory and not yet written:
// queued, plus the batch being built or retried.
func (w *Writer) Buffered() int {
	return len(w.ch) + int(w.pending.Load())
}

// Close flushes everything queued and stops the writer, waiting at most
// until ctx ends. Events recorded after Close are dropped.
func (w *Writer) Close(ctx context.Context) error {
	w.once.Do(func() { close(w.stop) })
	select {
	case <-w.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (w *Writer) loop() {
	defer close(w.done)
	t := time.NewTicker(w.opts.FlushInterval)
	defer t.Stop()
	batch := make([]Event, 0, w.opts.BatchSize)
	for {
		select {
		case e := <-w.ch:
			batch = append(batch, e)
			// Counted before the flush: a batch being written is still
			// only in memory.
			w.pending.Store(int64(len(batch)))
			if len(batch) >= w.opts.BatchSize && !w.failing {
				batch = w.flush(batch)
				w.pending.Store(int64(len(batch)))
			}
		case <-t.C:
			batch = w.flush(batch)
			w.pending.Store(int64(len(batch)))
			w.flushCounts()
		case <-w.stop:
			for {
				select {
				case e := <-w.ch:
					batch = append(batch, e)
					if len(batch) >= w.opts.BatchSize {
						batch = w.flush(batch)
					}
				default:
					w.flush(batch)
					w.flushCounts()
					return
				}
			}
		}
	}
}

// flush writes the batch and returns the slice to reuse. A failed batch is
// kept for the next attempt while it fits the buffer size; beyond that it is
// dropped and counted.
func (w *Writer) flush(batch []Event) []Event {
	if len(batch) == 0 {
		return batch
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	err := w.sink(ctx, batch)
	w.opts.Metrics.AuditBatch(len(batch), time.Since(start), err)
	w.failing = err != nil && !errors.Is(err, ErrRejected)
	if err != nil {
		if w.failing && len(batch) < w.opts.BufferSize {
			w.log.Error("audit flush failed; will retry", "events", len(batch), "error", err)
			return batch
		}
		w.dropped.Add(int64(len(batch)))
		w.opts.Metrics.AuditDropped(metrics.AuditBatchFailed, len(batch))
		w.log.Error("audit flush failed; batch dropped", "events", len(batch), "dropped_total", w.dropped.Load(), "error", err)
		return batch[:0]
	}
	if d := w.dropped.Swap(0); d > 0 {
		w.log.Error("audit events were dropped while the buffer was full", "dropped", d)
	}
	return batch[:0]
}
