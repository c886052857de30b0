package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/redact"
	"github.com/foodsafe/foodsafe/internal/validate"
	"github.com/foodsafe/foodsafe/internal/version"
)

// POST /mcp is the Model Context Protocol face of the API (Streamable HTTP,
// github.com/modelcontextprotocol/go-sdk): the route's middleware
// authenticates, rate limits and audits it like any other request, and
// every tool calls the operation of a REST route after that route's access
// check (http_mcp_tools.go). The SDK runs stateless with JSON responses, so any
// process answers any request and there is no session to keep.

// mcpServe is POST /mcp. Failures of the transport (a body that is not
// JSON-RPC, a wrong Accept header, an unsupported protocol version, a body
// over the limit) are problem documents like every other failure; JSON-RPC
// errors and tool results are the SDK's answers.
func (a *API) mcpServe(c *gin.Context) (err error) {
	defer func() {
		if err != nil && auditOutcomeKey.value(c) == "" {
			// Refused before the SDK read a method: the row says why.
			auditOutcomeKey.set(c, mcpRefusal(err))
		}
	}()
	if err := jsonContentType(c); err != nil {
		return err
	}
	// The body is read here, once, and checked before the SDK builds any
	// value from it: a batch, or a shape no MCP message has (validate.Bounds:
	// a _meta of a million numbers, thousands of unknown members), is
	// refused at the cost of its bytes.
	body, err := a.readBody(c)
	if err != nil {
		return err
	}
	if bytes.HasPrefix(bytes.TrimLeft(body, " \t\r\n"), []byte("[")) {
		auditOutcomeKey.set(c, "batch refused")
		return errBatch
	}
	if err := validate.Bounds(body); err != nil {
		return err
	}
	c.Request.Body = io.NopCloser(bytes.NewReader(body))
	p := principal(c)
	call := &mcpCall{principal: p, groups: toolGroupsOf(p), requestID: requestID(c), baseURL: a.baseURL(c)}
	c.Request = c.Request.WithContext(context.WithValue(c.Request.Context(), mcpCallKey{}, call))
	w := &sdkWriter{ResponseWriter: c.Writer}
	defer a.releaseAnswer(call)
	a.mcpHandler.ServeHTTP(w, c.Request)
	if w.failed != 0 {
		if res, ok := methodNotFound(w.failed, w.text.String(), body, call); ok {
			w.failed = 0
			c.Data(http.StatusOK, "application/json", res)
		}
	}
	traceMCP(c.Request.Context(), call)
	outcome, restaurant := call.outcome()
	if outcome == "" && w.refused != 0 {
		outcome = rpcRefusal(w.text.Bytes())
	}
	auditOutcomeKey.set(c, outcome)
	logMCPKey.set(c, outcome)
	auditRestaurantKey.set(c, restaurant)
	switch {
	case w.failed != 0:
		return a.sdkFailure(w.failed, w.text.String())
	case !c.Writer.Written() && c.Request.Context().Err() != nil:
		c.AbortWithStatus(statusClientClosedRequest)
	}
	return nil
}

// mcpRefusal is the audit outcome of an MCP request refused before any
// method ran: the problem type and its detail, cut short.
func mcpRefusal(err error) string {
	e, ok := apperr.As(err)
	if !ok {
		return "refused (" + string(apperr.Internal) + ")"
	}
	why := e.Detail
	if len(e.Errors) > 0 {
		// The violation says more than "the body is invalid".
		why = strings.TrimPrefix(e.Errors[0].Pointer+" "+e.Errors[0].Detail, " ")
	}
	return storableText("refused ("+string(e.Code)+"): "+why, 160)
}

// errBatch refuses a JSON-RPC batch. Batches were removed from MCP in
// protocol revision 2025-06-18, and the SDK still runs them for clients
// announcing an older revision (or none): one POST could then carry
// thousands of tool calls for one unit of the rate-limit budget and one
// audit row, with an answer hundreds of times its size. Refusing them at
// every revision keeps one POST to one JSON-RPC message: one call, one
// budget unit, one audit row, one page of at most wire.MaxLimit records.
var errBatch = apperr.New(apperr.Invalid,
	"JSON-RPC batches (a JSON array) are not accepted at any protocol revision: send one JSON-RPC message per POST.")

// methodNotFound is the JSON-RPC answer to a call of a method no MCP
// server has: "method not found" (-32601) with the call's id, what MCP
// clients expect and what the SDK answers itself under protocol
// 2026-07-28. Under earlier revisions the SDK refuses such a call in plain
// text before any server sees it (status 400, its text naming the
// unhandled method); ok is false for every other failure, and for
// anything that is not one call (a notification has no id to answer).
func methodNotFound(status int, text string, body []byte, call *mcpCall) ([]byte, bool) {
	if status != http.StatusBadRequest || !strings.Contains(text, "JSON RPC not handled") {
		return nil, false
	}
	msg, err := jsonrpc.DecodeMessage(body)
	req, isReq := msg.(*jsonrpc.Request)
	if err != nil || !isReq || !req.IsCall() {
		return nil, false
	}
	res, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{
		Code: jsonrpc.CodeMethodNotFound, Message: redact.Secrets(fmt.Sprintf("method not found: %q", storableText(req.Method, 100)))}})
	if err != nil {
		return nil, false
	}
	call.mu.Lock()
	call.method, call.rpcError = storableText(req.Method, 60), true
	call.mu.Unlock()
	return res, true
}

// sdkWriter holds back the SDK's plain-text error answers (http.Error) so
// that mcpServe can answer a problem document instead. JSON-RPC answers
// (application/json) go through untouched.
type sdkWriter struct {
	gin.ResponseWriter
	failed int
	text   bytes.Buffer
	// refused is the status of a JSON-RPC error answered with a 4xx
	// (protocol 2026-07-28), whose start is kept in text for the audit.
	refused int
	// written says the answer's first write was made.
	written bool
}

func (w *sdkWriter) WriteHeader(code int) {
	if code >= 400 && strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") {
		w.failed = code
		h := w.Header()
		h.Del("Content-Type")
		h.Del("X-Content-Type-Options")
		return
	}
	if code >= 400 {
		w.refused = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *sdkWriter) Write(b []byte) (int, error) {
	if w.failed != 0 || w.refused != 0 {
		if room := 1024 - w.text.Len(); room > 0 {
			w.text.Write(b[:min(room, len(b))])
		}
	}
	if w.failed != 0 {
		return len(b), nil
	}
	if !w.written {
		w.written = true
		if out, ok := redactedRPCError(b); ok {
			_, err := w.ResponseWriter.Write(out)
			return len(b), err
		}
	}
	return w.ResponseWriter.Write(b)
}

// redactedRPCError is a JSON-RPC error answer with every credential in it
// redacted: the SDK's messages quote what the client sent (`unknown tool
// "fsk_…"`, a header mismatch, a resource's URI), and a key pasted as a
// tool name or method must not come back. The SDK writes a JSON answer
// in one call, so the first write is the whole message; an answer with a
// result (a tool's, whose records are data as stored) is left alone, told
// by its "result" member before anything else is read.
func redactedRPCError(b []byte) ([]byte, bool) {
	if bytes.Contains(b[:min(len(b), 256)], []byte(`"result":`)) || len(b) > maxRPCError {
		return nil, false
	}
	msg, err := jsonrpc.DecodeMessage(b)
	if res, ok := msg.(*jsonrpc.Response); err != nil || !ok || res.Error == nil {
		return nil, false
	}
	return []byte(redact.Secrets(string(b))), true
}

// maxRPCError bounds the JSON-RPC errors redactedRPCError reads: the
// SDK's are a message and a few fields.
const maxRPCError = 64 << 10

// rpcRefusal is the audit outcome of a JSON-RPC error the SDK answered
// before any method ran (a header that does not match the body, an
// unknown revision's call): its message, cut short.
func rpcRefusal(body []byte) string {
	var res struct {
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &res) != nil || res.Error == nil {
		return "refused (protocol error)"
	}
	return storableText("refused (protocol error): "+res.Error.Message, 160)
}

// Unwrap lets the SDK reach the connection (http.ResponseController).
func (w *sdkWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// sdkFailure is the problem for an error the SDK answered in plain text.
// Its texts name what is wrong with the request and echo nothing secret.
func (a *API) sdkFailure(status int, text string) error {
	text = strings.TrimSpace(text)
	switch {
	case status == http.StatusRequestEntityTooLarge:
		return apperr.New(apperr.PayloadTooLarge, "The body exceeds the limit of %d bytes.", a.cfg.MaxBodyBytes)
	case status < 500:
		return apperr.New(apperr.Invalid, "MCP transport: %s.", strings.TrimSuffix(storableText(text, 300), "."))
	default:
		return fmt.Errorf("mcp transport answered %d: %s", status, text)
	}
}

// mcpInstructions is sent to clients on initialize: what a model should
// know before it calls any tool.
const mcpInstructions = "Food-safety records of restaurants (deliveries, temperatures, cleaning, cooling, traceability...) " +
	"as the partner API serves them, limited to what this API key may read. Start with list_restaurants, then " +
	"list_collections for a restaurant; describe_collection gives the JSON Schema of a collection's record data. Timestamps are epoch milliseconds as strings of digits (text output adds the " +
	"UTC date in brackets). Lists come in pages: pass a result's nextCursor as cursor, with every other argument " +
	"unchanged, until nextCursor is null. " + emptyCaveat

// newMCPHandler builds the SDK's HTTP handler. getServer runs twice per
// POST, so it must be cheap: it picks one of at most 2^groups servers,
// built once each (mcpServerFor).
func (a *API) newMCPHandler() http.Handler {
	return mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		call := callFrom(r.Context())
		if call == nil {
			return nil // not behind mcpServe; the SDK answers 400
		}
		return a.mcpServerFor(call.groups)
	}, &mcp.StreamableHTTPOptions{
		Stateless:    true,
		JSONResponse: true,
		// The DNS-rebinding guard refuses loopback connections whose Host is
		// not loopback: every request behind a reverse proxy on the same
		// host. It protects cookie-less local servers; this one requires a
		// bearer key on every request.
		DisableLocalhostProtection: true,
		MaxRequestBodyBytes:        a.cfg.MaxBodyBytes,
		Logger:                     a.sdkLog(),
	})
}

// mcpServerFor returns the server exposing the tools of the given groups.
// A server holds nothing about any key (tools read the caller from the
// request context), so one per set of visible tools is shared by all keys.
func (a *API) mcpServerFor(groups toolGroup) *mcp.Server {
	if s, ok := a.mcpServers.Load(groups); ok {
		return s.(*mcp.Server)
	}
	s, _ := a.mcpServers.LoadOrStore(groups, a.newMCPServer(groups))
	return s.(*mcp.Server)
}

func (a *API) newMCPServer(groups toolGroup) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "foodsafe", Title: "foodsafe partner API", Version: version.Version},
		&mcp.ServerOptions{
			Instructions: mcpInstructions,
			Logger:       a.sdkLog(),
			// No logging capability; tools never change while a server lives
			// (a key whose grants change is served by another server).
			Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
			// The tool list depends on the key: never cache it across users.
			SetCacheable: func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) { c.CacheScope = "private" },
		})
	s.AddReceivingMiddleware(a.observe)
	for _, t := range a.mcpTools {
		if groups&t.group == t.group {
			s.AddTool(t.tool, a.toolHandler(t))
		}
	}
	return s
}

// observe notes each JSON-RPC method (and tool) for the audit trail, and
// turns a panic outside a tool (tools recover their own) into a JSON-RPC
// internal error: the SDK's goroutines are beyond gin's recoverer.
func (a *API) observe(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (res mcp.Result, err error) {
		call := callFrom(ctx)
		defer func() {
			if rec := recover(); rec != nil {
				a.logPanic(ctx, call, method, rec)
				res, err = nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: internalDetail}
			}
		}()
		if call != nil {
			call.mu.Lock()
			call.method = storableText(method, 60)
			if ct, ok := req.(*mcp.CallToolRequest); ok && ct.Params != nil {
				call.tool = storableText(ct.Params.Name, 100)
			}
			call.mu.Unlock()
		}
		res, err = next(ctx, method, req)
		if err != nil && call != nil {
			call.mu.Lock()
			call.rpcError = true
			call.mu.Unlock()
		}
		return res, err
	}
}

// sdkLog is the SDK's logger: warnings and errors only (it logs every
// throwaway session at info), marked as the SDK's.
func (a *API) sdkLog() *slog.Logger {
	return slog.New(minLevel{a.log.Handler(), slog.LevelWarn}).With(slog.String("component", "mcp-sdk"))
}

// minLevel drops records below min.
type minLevel struct {
	slog.Handler
	min slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(as []slog.Attr) slog.Handler {
	return minLevel{h.Handler.WithAttrs(as), h.min}
}

func (h minLevel) WithGroup(name string) slog.Handler {
	return minLevel{h.Handler.WithGroup(name), h.min}
}
