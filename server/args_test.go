package server

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/resourced/resourced/server/internal/mcptool"
	"github.com/resourced/resourced/service"
	"github.com/resourced/resourced/toolapi"
)

// TestOversizedDurationsAreCapped: retention and downloadUrlTtl past what
// a time.Duration holds are capped at maxRetention and links.maxTTL, as
// the docs say, through the tools.
func TestOversizedDurationsAreCapped(t *testing.T) {
	e := newLinkEnv(t)
	for i, v := range []string{`1e12`, `9223372036854775808`, `"P99999999999D"`} {
		args := fmt.Sprintf(`{"path":"cap/%d","mimeType":"text/plain","text":"x","retention":%s,"includeDownloadUrl":true,"downloadUrlTtl":%s}`, i, v, v)
		res, rerr := e.callRaw(t, "save_report", []byte(args))
		if rerr != nil || res["isError"] == true {
			t.Errorf("save_report with retention and downloadUrlTtl %s: %v %v", v, rerr, res["structuredContent"])
			continue
		}
		sc := structuredOf(t, res)
		if want := e.clock.Add(8760 * time.Hour).Format(time.RFC3339); sc["expiresAt"] != want {
			t.Errorf("retention %s: expiresAt %v, want %s (maxRetention)", v, sc["expiresAt"], want)
		}
		if want := e.clock.Add(10 * time.Minute).Format(time.RFC3339); sc["downloadUrlExpiresAt"] != want {
			t.Errorf("downloadUrlTtl %s: downloadUrlExpiresAt %v, want %s (links.maxTTL)", v, sc["downloadUrlExpiresAt"], want)
		}
	}
}

func TestDecodeArgsNamesTheField(t *testing.T) {
	var a toolapi.SearchSnapshotArgs
	cases := map[string]string{
		`{"query": 5}`:                    "query: must be a string",
		`{"hits": [{"id": 1}]}`:           "hits[0].id: must be a string",
		`{"listed": "yes", "query": "q"}`: "listed: must be a boolean",
		`{"query": "q", "hits": [{"id": "1", "title": "", "snippet": "", "query": 1}]}`: "hits[0].query: is not an argument",
		`{"total": "2"}`:                 "total: must be an integer",
		`{"listed": "yes"}`:              "listed: must be a boolean",
		`{"query": "q", "surprise": 1}`:  "surprise: is not an argument",
		`[1, 2]`:                         "arguments must be a JSON object",
		`{"query": "q", "total": 1.5}`:   "total: must be an integer",
		`{"hits": {"id": "x"}}`:          "hits: must be an array",
		`{"query": "q", "hits": [], "x"`: "not valid JSON",
	}
	for in, want := range cases {
		terr := mcptool.DecodeArgs(json.RawMessage(in), &a)
		if terr == nil || terr.ErrorKind != service.KindValidation || !strings.Contains(terr.Message, want) {
			t.Errorf("decodeArgs(%s) = %+v, want validation_error containing %q", in, terr, want)
		}
	}
	if terr := mcptool.DecodeArgs(nil, &a); terr != nil {
		t.Errorf("decodeArgs(nil) = %v, want success (no arguments)", terr)
	}
}
