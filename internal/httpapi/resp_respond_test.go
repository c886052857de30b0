package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/store"
	"github.com/foodsafe/foodsafe/internal/wire"
)

// The answer of an applied change is the bytes c.PureJSON wrote for it
// (encoding/json compacts data), with a Content-Length, whatever the text
// the store returned as its data: compact as ingest stores it, or with
// jsonb's spaces, as the store returns data written while the column is
// still jsonb (the binary serves before migration 00013 and during its
// online conversion).
func TestRespondIngestedWritesWhatPureJSONWrote(t *testing.T) {
	gin.SetMode(gin.TestMode)
	sv := "v <&> \u2028"
	for _, data := range []string{
		``,
		`{"a":[1.50,-0,1E+2,"<b>&amp;</b> \u2028 é"],"b":{}}`,
		`{"n": [1, 2.50, 0, 100], "o": {"k": {}, "l": []}, "name": "a, b: \"c\" {d} [e]"}`,
		`{"asset":{"objectKey":"k","status":"uploaded"},"n":[1, 2]}`,
		"{\"a\" :\n\t[ 1 ,\r\"x y\" ] }",
	} {
		for _, how := range []store.Ingested{store.Applied, store.Replayed} {
			env := wire.Envelope{ID: "rec-1", RestaurantID: "r1", Collection: "areas", Data: json.RawMessage(data),
				Deleted: data == "", CapturedAt: 1, ReceivedAt: 2, Sequence: 3, MutationID: "m1", SourceVersion: &sv,
				PayloadVersion: 1, StateKind: wire.StateKind}
			got := httptest.NewRecorder()
			c, _ := gin.CreateTestContext(got)
			require.NoError(t, respondIngested(c, env, how))

			want := httptest.NewRecorder()
			w, _ := gin.CreateTestContext(want)
			w.PureJSON(http.StatusOK, Data[wire.Envelope]{Data: env})
			require.Equal(t, want.Body.String(), got.Body.String(), "data %q, %v", data, how)
			require.Equal(t, http.StatusOK, got.Code)
			require.Equal(t, "application/json; charset=utf-8", got.Header().Get("Content-Type"))
			if how == store.Applied && wire.Compacted(env.Data) { // written by hand, at once
				require.Equal(t, strconv.Itoa(got.Body.Len()), got.Header().Get("Content-Length"))
			}
		}
	}
}
