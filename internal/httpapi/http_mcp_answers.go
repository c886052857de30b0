package httpapi

import (
	"context"
	"errors"
	"runtime"

	"golang.org/x/sync/semaphore"

	"github.com/foodsafe/foodsafe/internal/wire"
)

// A tool's answer is encoded by the MCP SDK, which holds it two or three
// times over while it does (the result, then the JSON-RPC message around
// it), where REST streams the same list in pieces: list_restaurants of a
// key of 20,000 restaurants is 11 MB of JSON, some 60 MB in flight per
// call. Answers over largeAnswer therefore take their size from a budget
// of largeAnswersInFlight bytes for the process, held until the SDK has
// written them: a few large answers are encoded at once, the others wait
// their turn (or their client's deadline), and memory stays bounded
// however many are asked for at once.
const (
	largeAnswer          = 1 << 20
	largeAnswersInFlight = 24 << 20
)

func newLargeAnswers() *semaphore.Weighted { return semaphore.NewWeighted(largeAnswersInFlight) }

// errAnswered: a tool's answer came after its request was over.
var errAnswered = errors.New("the MCP request is over")

// answerSize estimates the JSON size of a tool's output, closely enough
// to tell a large answer from a small one; 0 for the outputs bounded by
// their page size.
func answerSize(out any) int64 {
	var n int64
	switch v := out.(type) {
	case wire.RestaurantList:
		for _, g := range v.Data {
			n += 32 + int64(len(g.RestaurantID))
			for _, s := range g.Scopes {
				n += 3 + int64(len(s))
			}
		}
	case wire.WalkPage:
		// A page holds at most wire.MaxLimit records, but each record's
		// data is as large as a device sent it.
		for _, e := range v.Data {
			n += 512 + int64(len(e.Data))
		}
	case wire.Page[wire.Delivery]:
		// As large as the provider wrote each: 1,000 temperatures and
		// lists of long reasons make a delivery of about 1 MiB.
		for _, d := range v.Data {
			n += deliverySize(d)
		}
	}
	return n
}

// deliverySize estimates a delivery's JSON size from its free text.
func deliverySize(d wire.Delivery) int64 {
	n := 512 + int64(len(d.Supplier.Name))
	for _, t := range d.TemperatureRecords {
		n += 64 + int64(len(t.Product)+len(t.LotNumber)+len(t.Unit)+len(t.Value))
	}
	for _, l := range [][]string{d.NonComplianceReasons, d.CorrectiveActions} {
		for _, s := range l {
			n += 3 + int64(len(s))
		}
	}
	if d.Commentary != nil {
		n += int64(len(*d.Commentary))
	}
	return n
}

// holdAnswer takes out's place in the budget of large answers, when it is
// one, until call's answer is written (mcpServe releases it).
func (a *API) holdAnswer(ctx context.Context, call *mcpCall, out any) error {
	n := answerSize(out)
	if n <= largeAnswer {
		return nil
	}
	n = min(n, largeAnswersInFlight)
	if err := a.largeAnswers.Acquire(ctx, n); err != nil {
		return err
	}
	call.mu.Lock()
	defer call.mu.Unlock()
	if call.answered {
		// The request is over (its client left while this waited).
		a.largeAnswers.Release(n)
		return errAnswered
	}
	call.held += n
	return nil
}

// releaseAnswer gives back what call's answer held, once the request is
// over.
func (a *API) releaseAnswer(call *mcpCall) {
	call.mu.Lock()
	n := call.held
	call.held, call.answered = 0, true
	call.mu.Unlock()
	if n > 0 {
		a.largeAnswers.Release(n)
		// What encoding it took is garbage now, tens of megabytes of it:
		// collected at once, rather than left to grow the heap to GOGC's
		// multiple of a peak that held several such answers.
		runtime.GC()
	}
}
