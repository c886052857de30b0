package httpapi

import (
	"html/template"
	"mime"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/foodsafe/foodsafe/internal/apperr"
)

// ProblemType is the JSON body of GET /problems/{code}: one row of
// apperr.Kinds, which is where every problem document's title and status
// come from too.
type ProblemType struct {
	Type   string `json:"type"`
	Code   string `json:"code"`
	Status int    `json:"status"`
	Title  string `json:"title"`
	When   string `json:"when"`
	Retry  string `json:"retry"`
}

var problemPage = template.Must(template.New("problem").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}} ({{.Status}})</title></head>
<body>
<h1>{{.Title}}</h1>
<p>HTTP status <strong>{{.Status}}</strong>, problem type <code>{{.Type}}</code>.</p>
<h2>When</h2><p>{{.When}}</p>
<h2>Retry</h2><p>{{.Retry}}</p>
<p>Every failure of the foodsafe partner API is an <code>application/problem+json</code> document (RFC 9457);
see the <a href="/v1/docs">API documentation</a>.</p>
</body></html>
`))

// problemType serves the page a problem document's type URI names: HTML
// for browsers, JSON when the client asks for it. Unknown codes are the
// one 404.
func (a *API) problemType(c *gin.Context) error {
	code := c.Param("code")
	var kind apperr.Kind
	for _, k := range apperr.Kinds {
		if string(k.Code) == code {
			kind = k
		}
	}
	if kind.Code == "" {
		return apperr.ErrNotFound
	}
	page := ProblemType{Type: problemType(a.cfg.BaseURL, kind.Code), Code: code, Status: kind.Status,
		Title: kind.Title, When: kind.When, Retry: kind.Retry}
	// The page is the same for everyone and changes only with a release.
	c.Header("Cache-Control", "public, max-age=3600")
	c.Header("Vary", "Accept")
	if wantsJSON(c.GetHeader("Accept")) {
		c.PureJSON(http.StatusOK, page)
		return nil
	}
	c.Status(http.StatusOK)
	c.Header("Content-Type", "text/html; charset=utf-8")
	return problemPage.Execute(c.Writer, page)
}

// wantsJSON reports whether an Accept header names a JSON media type
// before (or without) HTML; browsers send text/html first.
func wantsJSON(accept string) bool {
	for _, part := range strings.Split(accept, ",") {
		mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		switch {
		case mt == "text/html":
			return false
		case mt == "application/json" || strings.HasSuffix(mt, "+json"):
			return true
		}
	}
	return false
}
