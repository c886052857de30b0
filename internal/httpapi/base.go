package httpapi

import (
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"golang.org/x/sync/semaphore"

	"github.com/foodsafe/foodsafe/internal/audit"
	"github.com/foodsafe/foodsafe/internal/blob"
	"github.com/foodsafe/foodsafe/internal/config"
	"github.com/foodsafe/foodsafe/internal/cursor"
	"github.com/foodsafe/foodsafe/internal/metrics"
	"github.com/foodsafe/foodsafe/internal/ratelimit"
	"github.com/foodsafe/foodsafe/internal/store"
	"github.com/foodsafe/foodsafe/internal/validate"
)

// API holds the dependencies shared by handlers and middleware. Every
// layer hangs its methods on it, so it sits below them all; three of its
// fields hold the state of a layer above (the MCP tools, the health
// routes' cache, the upload slots), the arrows TestLayers names as kept.
type API struct {
	cfg     config.Config
	store   *store.Store
	log     *slog.Logger
	audit   *audit.Writer
	limiter *ratelimit.Limiter
	schemas *validate.Set
	// cursors issues and reads the cursors of every list.
	cursors *cursor.Issuer
	blobs   blob.Store
	// files serves /v1/files when the store is the filesystem; nil otherwise.
	files   *blob.FS
	metrics *metrics.Metrics
	now     func() time.Time
	// openapiJSON is the document served at /openapi.json, built once.
	openapiJSON []byte
	// mcpTools are the MCP tools (http_mcp_tools.go), mcpHandler the SDK's
	// handler behind POST /mcp, mcpServers one MCP server per set of
	// visible tools (toolGroup -> *mcp.Server), built on first use.
	mcpTools   []mcpTool
	mcpHandler http.Handler
	mcpServers sync.Map
	// uploads caps the file uploads in progress (op_uploads.go).
	uploads *uploadSlots
	// resumes are the requests sending to resumable uploads (op_resumable.go).
	resumes *resumeRequests
	// health is what the health routes keep between requests.
	health healthState
	// compress compresses the answers of every route not marked Raw.
	compress gin.HandlerFunc
	// largeAnswers is the budget of MCP answers being encoded at once
	// (http_mcp_answers.go).
	largeAnswers *semaphore.Weighted
}
