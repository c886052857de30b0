package mirror

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"
)

// StreamEvent is one step of a stream: a page applied, or the stream done.
type StreamEvent struct {
	Restaurant      string `json:"restaurant"`
	Stream          string `json:"stream"`
	Kind            string `json:"kind,omitempty"` // full, changes, rebuild, window
	Pages           int64  `json:"pages"`
	Records         int64  `json:"records"`
	Done            bool   `json:"done"`
	Failed          bool   `json:"failed,omitempty"`
	BudgetRemaining int    `json:"budgetRemaining"`
	BudgetLimit     int    `json:"budgetLimit"`
}

// Progress is told what a run does. Implementations: a redrawn table on
// a terminal, log lines otherwise, JSON lines with --json.
type Progress interface {
	Plan(streams int)
	Stream(StreamEvent)
	Wait(reason string, d time.Duration)
	Done(Summary)
}

type nopProgress struct{}

func (nopProgress) Plan(int)                   {}
func (nopProgress) Stream(StreamEvent)         {}
func (nopProgress) Wait(string, time.Duration) {}
func (nopProgress) Done(Summary)               {}

// JSONProgress writes one JSON object per line: {"event":"page",...},
// {"event":"wait",...}, {"event":"done",...}.
type JSONProgress struct {
	mu sync.Mutex
	w  io.Writer
}

// NewJSONProgress writes to w.
func NewJSONProgress(w io.Writer) *JSONProgress { return &JSONProgress{w: w} }

func (p *JSONProgress) emit(v any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	b, _ := json.Marshal(v)
	_, _ = p.w.Write(append(b, '\n'))
}

// Plan announces the number of streams.
func (p *JSONProgress) Plan(n int) {
	p.emit(struct {
		Event   string `json:"event"`
		Streams int    `json:"streams"`
	}{"plan", n})
}

// Stream reports a page.
func (p *JSONProgress) Stream(e StreamEvent) {
	p.emit(struct {
		Event string `json:"event"`
		StreamEvent
	}{"page", e})
}

// Wait reports a pause.
func (p *JSONProgress) Wait(reason string, d time.Duration) {
	p.emit(struct {
		Event  string `json:"event"`
		Reason string `json:"reason"`
		WaitMS int64  `json:"waitMs"`
	}{"wait", reason, d.Milliseconds()})
}

// Done reports the run's summary.
func (p *JSONProgress) Done(s Summary) {
	p.emit(struct {
		Event string `json:"event"`
		Summary
	}{"done", s})
}

// LogProgress writes a log line per finished stream (and every 50 pages of
// a long one), for logs and pipes.
type LogProgress struct{ Log *slog.Logger }

// Plan logs the plan.
func (p LogProgress) Plan(n int) { p.Log.Info("sync started", "streams", n) }

// Stream logs finished streams and every 50th page.
func (p LogProgress) Stream(e StreamEvent) {
	if !e.Done && e.Pages%50 != 0 || e.Failed {
		return
	}
	msg := "stream synced"
	if !e.Done {
		msg = "stream syncing"
	}
	p.Log.Info(msg, "restaurant", e.Restaurant, "stream", e.Stream, "kind", e.Kind, "pages", e.Pages, "records", e.Records,
		"budget", fmt.Sprintf("%d/%d", e.BudgetRemaining, e.BudgetLimit))
}

// Wait logs pauses longer than a second.
func (p LogProgress) Wait(reason string, d time.Duration) {
	if d >= time.Second {
		p.Log.Info("waiting", "reason", reason, "for", d.Round(time.Millisecond).String())
	}
}

// Done logs the summary.
func (p LogProgress) Done(s Summary) {
	p.Log.Info("sync finished", "restaurants", s.Restaurants, "streams", s.Streams, "failed", s.Failed, "pages", s.Pages,
		"records", s.Records, "deliveries", s.Deliveries, "files", s.Files, "requests", s.Requests, "duration", time.Duration(s.DurationMS)*time.Millisecond)
}

// TTYProgress redraws a small table on a terminal: one line per stream
// with its pages and records, the budget left, and an ETA from the streams
// done so far (the API publishes no counts, so a stream's own length is
// unknown until its last page).
type TTYProgress struct {
	mu      sync.Mutex
	w       io.Writer
	start   time.Time
	total   int
	done    int
	streams map[string]StreamEvent
	wait    string
	lines   int
}

// NewTTYProgress draws on w (a terminal).
func NewTTYProgress(w io.Writer) *TTYProgress {
	return &TTYProgress{w: w, start: time.Now(), streams: map[string]StreamEvent{}}
}

// Plan records the number of streams.
func (p *TTYProgress) Plan(n int) {
	p.mu.Lock()
	p.total = n
	p.mu.Unlock()
}

// Stream updates a stream's line.
func (p *TTYProgress) Stream(e StreamEvent) {
	p.mu.Lock()
	defer p.mu.Unlock()
	key := e.Restaurant + " " + e.Stream
	if e.Done && !p.streams[key].Done {
		p.done++
	}
	if e.Failed {
		old := p.streams[key]
		old.Failed, old.Done = true, true
		e = old
	}
	p.streams[key] = e
	p.wait = ""
	p.draw()
}

// Wait shows the current pause.
func (p *TTYProgress) Wait(reason string, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.wait = fmt.Sprintf("waiting %s (%s)", d.Round(100*time.Millisecond), reason)
	p.draw()
}

// Done prints the summary under the table.
func (p *TTYProgress) Done(s Summary) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.wait = ""
	p.draw()
	fmt.Fprintf(p.w, "done in %s: %d streams (%d failed), %d pages, %d records, %d deliveries, %d files, %d requests\n",
		(time.Duration(s.DurationMS) * time.Millisecond).Round(100*time.Millisecond), s.Streams, s.Failed, s.Pages, s.Records, s.Deliveries, s.Files, s.Requests)
}

func (p *TTYProgress) draw() {
	var b strings.Builder
	if p.lines > 0 {
		fmt.Fprintf(&b, "\x1b[%dA", p.lines) // back to the table's first line
	}
	keys := make([]string, 0, len(p.streams))
	for k := range p.streams {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	// Show the streams under way and the last few finished ones.
	var shown []string
	for _, k := range keys {
		if !p.streams[k].Done {
			shown = append(shown, k)
		}
	}
	eta := "ETA -"
	if p.done > 0 && p.total > p.done {
		per := time.Since(p.start) / time.Duration(p.done)
		eta = "ETA ~" + (per * time.Duration(p.total-p.done)).Round(time.Second).String()
	} else if p.total > 0 && p.done == p.total {
		eta = "ETA 0s"
	}
	var rem, lim int
	lines := []string{fmt.Sprintf("streams %d/%d  %s  elapsed %s", p.done, p.total, eta, time.Since(p.start).Round(time.Second))}
	for _, k := range shown {
		e := p.streams[k]
		rem, lim = e.BudgetRemaining, e.BudgetLimit
		lines = append(lines, fmt.Sprintf("  %-40s %-8s pages %6d  records %9d", k, e.Kind, e.Pages, e.Records))
	}
	if lim > 0 {
		lines[0] += fmt.Sprintf("  budget %d/%d", rem, lim)
	}
	if p.wait != "" {
		lines = append(lines, "  "+p.wait)
	}
	for _, l := range lines {
		b.WriteString("\x1b[2K" + l + "\n")
	}
	// Clear what the previous drawing had below.
	for i := len(lines); i < p.lines; i++ {
		b.WriteString("\x1b[2K\n")
	}
	if n := p.lines - len(lines); n > 0 {
		fmt.Fprintf(&b, "\x1b[%dA", n)
	}
	p.lines = len(lines)
	_, _ = io.WriteString(p.w, b.String())
}
