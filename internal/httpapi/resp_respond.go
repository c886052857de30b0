package httpapi

import (
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/metrics"
	"github.com/foodsafe/foodsafe/internal/store"
	"github.com/foodsafe/foodsafe/internal/wire"
)

// HeaderReplayed marks an idempotent replay of an earlier write.
const HeaderReplayed = "Idempotent-Replayed"

// HeaderReplayedState qualifies a replay: "compacted" when the replayed
// change's data is no longer kept, so its envelope has no data.
const HeaderReplayedState = "Idempotent-Replayed-State"

// handler is a route's handler: it writes its answer, or returns the error
// that fail renders as a problem document. Returning the error (instead of
// calling fail and returning) keeps a forgotten `return` from writing a
// second answer.
type handler func(c *gin.Context) error

// handle adapts a handler to gin.
func (a *API) handle(h handler) gin.HandlerFunc {
	return func(c *gin.Context) {
		if err := h(c); err != nil {
			a.fail(c, err)
		}
	}
}

// List is the {"data": [...]} envelope of list responses.
type List[T any] struct {
	Data []T `json:"data" jsonschema:"Every item; the list is complete (it has no pages)."`
}

// Data wraps a single resource in {"data": ...}, the shape of write
// responses.
type Data[T any] struct {
	Data T `json:"data"`
}

// respondWritten answers a write with the resource as stored, marked when
// it replays an earlier identical write.
func respondWritten[T any](c *gin.Context, v T, replayed bool) error {
	if replayed {
		c.Header(HeaderReplayed, "true")
	}
	c.PureJSON(http.StatusOK, Data[T]{Data: v})
	return nil
}

// respondIngested answers a record write (a snapshot or an asset upload)
// with the envelope it produced, marking replays, and replays of a
// compacted change: without that mark, a replay's envelope without data
// could be read as a record emptied by the device.
func respondIngested(c *gin.Context, env wire.Envelope, how store.Ingested) error {
	if how == store.ReplayedCompacted {
		c.Header(HeaderReplayedState, "compacted")
	}
	// A change just applied carries the data as this service stored it,
	// compacted: written by hand, it is the bytes encoding/json writes. A
	// replay may carry data stored before migration 00013 (jsonb's text),
	// which encoding/json compacts, so replays keep it; so does a change
	// applied while the column is still jsonb (dataEnvelope refuses it).
	if how == store.Applied && writeAppended(c, dataEnvelope{env}) {
		return nil
	}
	return respondWritten(c, env, how != store.Applied)
}

// dataEnvelope writes Data[wire.Envelope] by hand (wire/append.go), and
// refuses data that is not compacted: encoding/json compacts it.
type dataEnvelope struct{ env wire.Envelope }

// errNotCompacted: data with whitespace between its tokens, as a jsonb
// column returns it.
var errNotCompacted = errors.New("the data is not compacted")

func (d dataEnvelope) AppendJSON(b []byte) ([]byte, error) {
	if !wire.Compacted(d.env.Data) {
		return nil, errNotCompacted
	}
	b, err := d.env.AppendJSON(append(b, `{"data":`...))
	if err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// writeOutcome is how an ingest write ended, for its metrics: applied,
// replayed, conflicted, or rejected with the reason (the problem code, or
// the client having gone).
func writeOutcome(err error, replayed, clientGone bool) (metrics.Outcome, string) {
	switch {
	case err == nil && replayed:
		return metrics.Replayed, ""
	case err == nil:
		return metrics.Applied, ""
	case clientGone:
		return metrics.Rejected, metrics.ReasonClientClosed
	case apperr.Is(err, apperr.Conflict):
		return metrics.Conflicted, ""
	}
	if e, ok := apperr.As(err); ok {
		return metrics.Rejected, string(e.Code)
	}
	return metrics.Rejected, string(apperr.Internal)
}
