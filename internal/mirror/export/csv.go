package export

import (
	"encoding/csv"
	"io"
	"strconv"
	"time"

	"github.com/foodsafe/foodsafe/internal/mirror/typed"
)

// csvWriter writes a relation as CSV (RFC 4180) with a header line:
// times in ISO-8601 UTC with milliseconds, booleans true or false, null
// as an empty field (which CSV cannot tell from an empty text).
type csvWriter struct {
	w   *csv.Writer
	rec []string
}

func newCSVWriter(w io.Writer, r *typed.Relation) (*csvWriter, error) {
	c := &csvWriter{w: csv.NewWriter(w), rec: make([]string, len(r.Columns))}
	for i, col := range r.Columns {
		c.rec[i] = col.Name
	}
	return c, c.w.Write(c.rec)
}

func (c *csvWriter) write(row []any) error {
	for i, v := range row {
		switch v := v.(type) {
		case nil:
			c.rec[i] = ""
		case string:
			c.rec[i] = v
		case int64:
			c.rec[i] = strconv.FormatInt(v, 10)
		case float64:
			c.rec[i] = strconv.FormatFloat(v, 'g', -1, 64)
		case bool:
			c.rec[i] = strconv.FormatBool(v)
		case time.Time:
			c.rec[i] = v.UTC().Format(typed.TimeText)
		}
	}
	return c.w.Write(c.rec)
}

func (c *csvWriter) close() error {
	c.w.Flush()
	return c.w.Error()
}
