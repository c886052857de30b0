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
package audit

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"
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
	Minute      time.Time
	ClientIP    netip.Addr
	Method      string
	Route       string
	Status      int
	Outcome     string
	KeyPublicID string
}

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
	// a request of a new shape beyond it is dropped and counted.
	MaxShapes int
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

	// shapes are the requests counted since the last flush of counts.
	smu    sync.Mutex
	shapes map[Shape]int64
}

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
		w.opts.Metrics.AuditDropped(metrics.AuditShapesFull, 1)
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
	shapes := w.shapes
	w.shapes = nil
	w.smu.Unlock()
	if len(shapes) == 0 {
		return
	}
	rows := make([]ShapeCount, 0, len(shapes))
	var requests int64
	for s, n := range shapes {
		rows = append(rows, ShapeCount{Shape: s, Requests: n})
		requests += n
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
	if errors.Is(err, ErrRejected) || len(w.shapes)+len(shapes) > w.opts.MaxShapes {
		w.opts.Metrics.AuditDropped(metrics.AuditBatchFailed, int(requests))
		w.log.Error("audit counts not written; dropped", "shapes", len(shapes), "requests", requests, "error", err)
		return
	}
	w.log.Error("audit counts not written; will retry", "shapes", len(shapes), "error", err)
	if w.shapes == nil {
		w.shapes = make(map[Shape]int64, len(shapes))
	}
	for s, n := range shapes {
		w.shapes[s] += n
	}
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
