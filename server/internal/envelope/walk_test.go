package envelope

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/resourced/resourced/internal/jsonwire"
)

// said is what the checks said of one body: Parse's error or messages,
// Check's answer for each message, and what the fast paths take.
type said struct {
	err    error
	msgs   []Message
	checks []error
	fast   Fast
}

// walked is what the walk says of body.
func walked(body []byte) said {
	msgs, err := Parse(body)
	s := said{err: err, msgs: msgs}
	for i := range msgs {
		s.checks = append(s.checks, Check(&msgs[i]))
	}
	if len(msgs) == 1 {
		s.fast = msgs[0].Fast
	}
	return s
}

// checked is what the checks the walk replaced (oracle_test.go) say of
// body: json.Valid, UniqueMembers, the message parse, Check, and the fast
// paths' gate (an object nested at most 64 deep) and parse.
func checked(body []byte) said {
	msgs, err := oldParse(body)
	s := said{err: err, msgs: msgs}
	for i := range msgs {
		s.checks = append(s.checks, oldCheck(&msgs[i]))
	}
	if len(msgs) != 1 {
		return s
	}
	if b := bytes.TrimLeft(body, " \t\r\n"); len(b) == 0 || b[0] != '{' || !oldShallow(body, maxFastDepth) {
		return s
	}
	if r, ok := parseFastRead(body); ok {
		s.fast = Fast{Read: true, URI: r.URI, ProtocolVersion: r.ProtocolVersion, ClientInfo: r.ClientInfo,
			ClientCapabilities: r.ClientCapabilities, LogLevel: r.LogLevel}
	}
	if c, ok := parseFastCall(body); ok && c.Name == msgs[0].Tool && oldNumbersFit(c.RawMeta) {
		s.fast = Fast{Call: true, Name: c.Name, Args: c.Args, ArgsFit: oldNumbersFit(c.Args),
			ProtocolVersion: c.Meta.ProtocolVersion, ClientInfo: c.Meta.ClientInfo,
			ClientCapabilities: c.Meta.ClientCapabilities, LogLevel: c.Meta.LogLevel}
	}
	return s
}

// describe renders an error with its kind, so that two errors compare
// equal only when a client would see the same answer.
func describe(err error) string {
	var (
		ee *Error
		me *MethodError
		pe *ParamsError
	)
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, jsonwire.ErrSyntax):
		return "syntax"
	case errors.As(err, &ee):
		return "envelope: " + ee.Reason
	case errors.As(err, &me):
		return "method: " + me.Method
	case errors.As(err, &pe):
		return "params: " + pe.Msg
	}
	return fmt.Sprintf("%T: %v", err, err)
}

// agree reports how the walk's answer for body differs from the old
// checks', or "".
func agree(body []byte) string {
	got, want := walked(body), checked(body)
	if g, w := describe(got.err), describe(want.err); g != w {
		return fmt.Sprintf("Parse: %s, the old checks: %s", g, w)
	}
	if len(got.msgs) != len(want.msgs) {
		return fmt.Sprintf("%d messages, the old checks %d", len(got.msgs), len(want.msgs))
	}
	for i := range got.msgs {
		g, w := got.msgs[i], want.msgs[i]
		if g.Method != w.Method || g.Tool != w.Tool || g.HasID != w.HasID || g.HasMethod != w.HasMethod ||
			!bytes.Equal(g.ID, w.ID) || !bytes.Equal(g.Params, w.Params) {
			return fmt.Sprintf("message %d: %+v, the old checks %+v", i, g, w)
		}
		if g, w := describe(got.checks[i]), describe(want.checks[i]); g != w {
			return fmt.Sprintf("Check of message %d: %s, the old checks: %s", i, g, w)
		}
	}
	g, w := got.fast, want.fast
	if !g.Call {
		g.Args, g.ArgsFit = nil, false // what only the call path reads
	}
	if g.Read != w.Read || g.Call != w.Call || g.URI != w.URI || g.Name != w.Name ||
		!bytes.Equal(g.Args, w.Args) || g.ArgsFit != w.ArgsFit ||
		!bytes.Equal(g.ProtocolVersion, w.ProtocolVersion) || !bytes.Equal(g.ClientInfo, w.ClientInfo) ||
		!bytes.Equal(g.ClientCapabilities, w.ClientCapabilities) || !bytes.Equal(g.LogLevel, w.LogLevel) {
		return fmt.Sprintf("Fast: %+v, the old checks %+v", g, w)
	}
	return ""
}

const (
	pv   = `"io.modelcontextprotocol/protocolVersion"`
	caps = `"io.modelcontextprotocol/clientCapabilities"`
)

// seeds are bodies each check has an opinion on.
var seeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"report://t1/x"}}`,
	`{"jsonrpc":"2.0","id":"a","method":"resources/read","params":{"uri":"report://t1/x","_meta":{` + pv + `:"2026-07-28",` + caps + `:{}}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"report://t1/x","_meta":{"x":[1,{"y":-1e400}]}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"report://t1/x","_meta":{"x":1e-400,"z":0e5}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"a\/b"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":null}}`,
	`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"URI":5}}`,
	`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"x","inputResponses":{"a":"b"}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"save_report","arguments":{"path":"a","text":"x","n":1e400}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"save_report","arguments":{"path":"j/a","path":"j/b"}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"save_search_snapshot","arguments":{"query":"q","hits":[{"url":"a","url":"b"}]}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{},"inputResponses":null}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{},"InputResponses":{"a":{}},"inputResponses":{"b":1}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"Name":5,"_META":3}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a\u00e9","arguments":{}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ab","arguments":{},"_meta":{"progressToken":1}}}`,
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"a\xffb\",\"arguments\":{}}}",
	`{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"x","inputResponses":[]}}`,
	`{"jsonrpc":"2.0","id":1,"method":"resources/list","params":{"cursor":5}}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping","params":[1]}`,
	`{"jsonrpc":"2.0","id":1,"method":"resources/read"}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":null}`,
	`{"jsonrpc":"2.0","method":"tools/call","params":null}`,
	`{"jsonrpc":"2.0","id":null,"method":"resources/read"}`,
	`[{"jsonrpc":"2.0","id":1,"method":"resources/read"}]`,
	"{\"jsonrpc\":\"2.0\",\"id\":\"a\xffb\",\"method\":\"ping\"}",
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"pi\xed\xa0\x80ng\"}",
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"\xc3\":1}}",
	`{"jsonrpc":"2.0","id":"a\ud800b","method":"ping"}`,
	`{"jsonrpc":"2.0","id":"\udc00\ud83d\ude00","method":"ping"}`,
	`{"jsonrpc":"2.0","id":"\ud83d\ude00 \\ud800","method":"ping"}`,
	`{"jsonrpc":"2.0","id":"x","method":"nope/nope","params":{}}`,
	`{"jsonrpc":"2.0","method":"notifications/nope"}`,
	`{"jsonrpc":"2.0","id":1,"method":5}`,
	`{"jsonrpc":"1.0","id":1,"method":"ping"}`,
	`{"jsonrpc":"2\u002e0","id":1,"method":"ping"}`,
	`{"id":1,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":1}`,
	`{"jsonrpc":"2.0","id":1,"result":{}}`,
	`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":9007199254740992,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":{"a":1},"method":"ping","id":2}`,
	`{"jsonrpc":"2.0","id":null,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping","extra":true}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":1,"a":2},"x":[}`,
	`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`,
	`[{"jsonrpc":"2.0","id":1.5,"method":"ping"},{"id":2,"m":"x","m":"y"}]`,
	`[{"id":1,"method":"ping"},{"jsonrpc":"2.0","id":1.5,"method":"ping"}]`,
	`[{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"x"}}]`,
	`[1]`, `[]`, `[[]]`, `{}`, `5`, `"x"`, `null`, ``, ` `, `{"a":1}x`, `{"a":01}`, `{"a":-}`, `{"a":1.}`,
	`{"a":"\x"}`, "{\"a\":\"\x01\"}", `{"a":"\u12"}`, `{"a\u0062":1,"ab":2}`, `{"s":"{\"a\":1,\"a\":2}"}`,
	`{"x":[1,{"k":"v"},{"k":1,"k":2}]}`, `{"a":tru}`, `{"a":nul,"b":2}`, ` {"jsonrpc" : "2.0" , "id" : 1 , "method" : "ping" } `,
	`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"x"},"params":{}}`,
	`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"x","_meta":{"a":` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + `}}}`,
}

// TestParseAgreesWithTheOldChecks: on every seed, and on many bodies made
// from them by small random edits, the walk answers what the checks it
// replaced answered, error for error.
func TestParseAgreesWithTheOldChecks(t *testing.T) {
	for _, s := range seeds {
		if d := agree([]byte(s)); d != "" {
			t.Errorf("%s: %s", s, d)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	pieces := []string{`"`, `\`, `{`, `}`, `[`, `]`, `,`, `:`, ` `, `1e400`, `-0`, `null`, `"uri"`, `"name"`, `"_meta"`,
		`"arguments"`, `"params"`, `"id"`, `"method"`, `"jsonrpc"`, `"inputResponses"`, `{}`, `"x"`, `\u0061`, "\xff", `2`}
	for n := 0; n < 50000; n++ {
		b := []byte(seeds[r.IntN(len(seeds))])
		for range 1 + r.IntN(3) {
			at := r.IntN(len(b) + 1)
			switch r.IntN(3) {
			case 0: // insert
				b = append(b[:at:at], append([]byte(pieces[r.IntN(len(pieces))]), b[at:]...)...)
			case 1: // delete
				if at < len(b) {
					b = append(b[:at:at], b[at+1+r.IntN(min(4, len(b)-at)):]...)
				}
			case 2: // duplicate a span
				if at < len(b) {
					end := at + 1 + r.IntN(min(40, len(b)-at))
					b = append(b[:end:end], b[at:]...)
				}
			}
		}
		if d := agree(b); d != "" {
			t.Fatalf("%s: %s", b, d)
		}
	}
}

// TestParseErrorOrder: where one body breaks several rules, the answer is
// the one the separate checks gave: not JSON before a duplicate member
// before the first message that is not JSON-RPC, wherever each sits.
func TestParseErrorOrder(t *testing.T) {
	for body, want := range map[string]string{
		`{"jsonrpc":"2.0","a":1,"a":2,"id":1.5,"method":"ping"`:   "syntax",
		`{"jsonrpc":"2.0","id":1.5,"method":"ping","a":1,"a":2}`:  `envelope: member "a" appears twice`,
		`{"jsonrpc":"1.0","id":1.5,"method":5}`:                   "envelope: the id must be a string or an integer between -(2^53-1) and 2^53-1, got 1.5",
		`{"jsonrpc":"1.0","id":1,"method":5}`:                     "envelope: the method must be a string",
		`{"jsonrpc":"1.0","id":1}`:                                `envelope: the jsonrpc member must be "2.0"`,
		`[{"jsonrpc":"1.0"},{"jsonrpc":"2.0","id":1.5}]`:          `envelope: the jsonrpc member must be "2.0"`,
		`[{"jsonrpc":"2.0","id":1},{"x":[{"k":1,"k":2}]}]`:        `envelope: member "k" appears twice in [1].x[0]`,
		`{"params":{"arguments":{"path":"j/a","path":"j/b"}}}`:    `envelope: member "path" appears twice in params.arguments`,
		`{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":{}}}`: "ok",
		`{"a\u0062":1,"ab":2}`:                                    `envelope: member "ab" appears twice`,
		`{"x":[1,{"k":"v"},{"k":1,"k":2}]}`:                       `envelope: member "k" appears twice in x[2]`,
		`{"s":"{\"a\":1,\"a\":2}","t":"x,\"t\":"}`:                `envelope: the jsonrpc member must be "2.0"`,
	} {
		_, err := Parse([]byte(body))
		if got := describe(err); got != want {
			t.Errorf("Parse(%s) = %s, want %s", body, got, want)
		}
		if d := agree([]byte(body)); d != "" {
			t.Errorf("%s: %s", body, d)
		}
	}
}

// TestCheckMissingParams: a request whose method requires params (go-sdk's
// methods without missingParamsOK) and has none, absent or null, is
// malformed params; a method that takes none, a message without an id
// and one in a batch keep go-sdk's answer (Check says nothing).
func TestCheckMissingParams(t *testing.T) {
	const missing = `params: Invalid params: missing required "params"`
	for body, want := range map[string]string{
		`{"jsonrpc":"2.0","id":1,"method":"resources/read"}`:                                                      missing,
		`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":null}`:                                        missing,
		`{"jsonrpc":"2.0","id":1,"method":"resources/read","params": null }`:                                      missing,
		`{"jsonrpc":"2.0","id":"a","method":"tools/call"}`:                                                        missing,
		`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":null}`:                                          missing,
		`{"jsonrpc":"2.0","id":1,"method":"initialize"}`:                                                          missing,
		`{"jsonrpc":"2.0","id":1,"method":"completion/complete"}`:                                                 missing,
		`{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":null}`:                                           missing,
		`{"jsonrpc":"2.0","id":1,"method":"logging/setLevel"}`:                                                    missing,
		`{"jsonrpc":"2.0","id":1,"method":"resources/subscribe"}`:                                                 missing,
		`{"jsonrpc":"2.0","id":1,"method":"resources/unsubscribe"}`:                                               missing,
		`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":null}`:                                  missing,
		`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":[]}`:                                          "params: Invalid params: params must be an object",
		`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{}}`:                                          "ok",
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`:                                                                "ok",
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":null}`:                                            "ok",
		`{"jsonrpc":"2.0","id":1,"method":"server/discover"}`:                                                     "ok",
		`{"jsonrpc":"2.0","method":"resources/read"}`:                                                             "ok",
		`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":null}`:                                         "ok",
		`{"jsonrpc":"2.0","method":"notifications/progress"}`:                                                     "ok",
		`[{"jsonrpc":"2.0","id":1,"method":"resources/read"}]`:                                                    "ok",
		`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":null}]`: "ok",
	} {
		msgs, err := Parse([]byte(body))
		if err != nil {
			t.Fatalf("Parse(%s): %v", body, err)
		}
		got := "ok"
		for i := range msgs {
			if err := Check(&msgs[i]); err != nil {
				got = describe(err)
				break
			}
		}
		if got != want {
			t.Errorf("Check(%s) = %s, want %s", body, got, want)
		}
		if d := agree([]byte(body)); d != "" {
			t.Errorf("%s: %s", body, d)
		}
	}
}

// TestParseRefusesInvalidUnicode: bytes that are not UTF-8 anywhere in a
// body make it not JSON (RFC 8259 §8.1), though json.Valid takes them
// and go-sdk would answer with U+FFFD in their place (an id the client
// cannot match). A \uD800-\uDFFF escape without its other half is JSON,
// but an id holding one cannot be written back as sent: the message is
// refused. Elsewhere such an escape is the receiver's to judge (a tool's
// validation_error).
func TestParseRefusesInvalidUnicode(t *testing.T) {
	const notUTF8 = "syntax"
	const loneID = `envelope: the id must be a Unicode string: its escape \ud800 is half of a UTF-16 surrogate pair`
	for body, want := range map[string]string{
		"{\"jsonrpc\":\"2.0\",\"id\":\"a\xffb\",\"method\":\"ping\"}":                                                         notUTF8,
		"{\"jsonrpc\":\"2.0\",\"id\":\"\xc3\",\"method\":\"ping\"}":                                                           notUTF8, // a character cut short
		"{\"jsonrpc\":\"2.0\",\"id\":\"\xc0\xaf\",\"method\":\"ping\"}":                                                       notUTF8, // overlong '/'
		"{\"jsonrpc\":\"2.0\",\"id\":\"\xed\xa0\x80\",\"method\":\"ping\"}":                                                   notUTF8, // a surrogate, UTF-8 encoded
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"pi\xffng\"}":                                                              notUTF8,
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"stat\xff\",\"arguments\":{}}}":        notUTF8,
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"x\",\"arguments\":{\"t\":\"\x80\"}}}": notUTF8,
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"\xff\":1}":                                                       notUTF8, // a member name
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\xff":                                                              notUTF8,
		"{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\",\"a\":\"\xff\"}":                                                 notUTF8, // before any other error
		`{"jsonrpc":"2.0","id":"a\ud800b","method":"ping"}`:                                                                   loneID,
		`{"jsonrpc":"2.0","id":"\ud800","result":{}}`:                                                                         loneID,
		`{"jsonrpc":"2.0","id":"a\udc00","method":"ping"}`:                                                                    `envelope: the id must be a Unicode string: its escape \udc00 is half of a UTF-16 surrogate pair`,
		`{"jsonrpc":"2.0","id":"\uD83D\u0041","method":"ping"}`:                                                               `envelope: the id must be a Unicode string: its escape \uD83D is half of a UTF-16 surrogate pair`,
		`{"jsonrpc":"2.0","id":"\ud83d\ude00 é \ufffd \\ud800","method":"ping"}`:                                              "ok",
		"{\"jsonrpc\":\"2.0\",\"id\":\"\xef\xbf\xbd\xf0\x9f\x98\x80\",\"method\":\"ping\"}":                                   "ok",
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"t":"\ud800"}}}`:                     "ok",
	} {
		_, err := Parse([]byte(body))
		if got := describe(err); got != want {
			t.Errorf("Parse(%q) = %s, want %s", body, got, want)
		}
		if d := agree([]byte(body)); d != "" {
			t.Errorf("%q: %s", body, d)
		}
	}
}

// TestParseLimits: encoding/json's nesting limit, and objects with more
// members than the walk keeps without a map.
func TestParseLimits(t *testing.T) {
	for _, depth := range []int{maxFastDepth, maxFastDepth + 1, 5000, maxDepth, maxDepth + 1} {
		body := []byte(`{"a":` + strings.Repeat("[", depth-1) + strings.Repeat("]", depth-1) + "}")
		if d := agree(body); d != "" {
			t.Errorf("depth %d: %s", depth, d)
		}
		if _, err := Parse(body); errors.Is(err, jsonwire.ErrSyntax) != !json.Valid(body) {
			t.Errorf("depth %d: Parse says %v, json.Valid %v", depth, err, json.Valid(body))
		}
	}
	// go-sdk's limit: a message nested sdkMaxDepth deep is taken, one
	// level deeper is ErrTooDeep up to encoding/json's limit, a syntax
	// error beyond it; a body wrong in another way keeps that answer.
	deep := func(version string, depth int) []byte { // message, params, arguments: 3 levels
		return []byte(`{"jsonrpc":"` + version + `","id":1,"method":"tools/call","params":{"name":"t","arguments":{"x":` +
			strings.Repeat("[", depth-3) + strings.Repeat("]", depth-3) + `}}}`)
	}
	for _, tc := range []struct {
		body []byte
		want string
	}{
		{deep("2.0", sdkMaxDepth), "ok"},
		{deep("2.0", sdkMaxDepth+1), describe(ErrTooDeep)},
		{deep("2.0", maxDepth), describe(ErrTooDeep)},
		{deep("2.0", maxDepth+1), "syntax"},
		{deep("1.0", sdkMaxDepth+1), `envelope: the jsonrpc member must be "2.0"`},
	} {
		_, err := Parse(tc.body)
		if got := describe(err); got != tc.want {
			t.Errorf("%.40s… (%d bytes): Parse = %s, want %s", tc.body, len(tc.body), got, tc.want)
		}
		if d := agree(tc.body); d != "" {
			t.Errorf("%.40s… (%d bytes): %s", tc.body, len(tc.body), d)
		}
	}
	var b strings.Builder
	b.WriteString("{")
	for i := range 100 {
		b.WriteString(`"k` + strings.Repeat("x", i) + `":1,`)
	}
	b.WriteString(`"k":2}`)
	if _, err := Parse([]byte(b.String())); describe(err) != `envelope: member "k" appears twice` {
		t.Errorf("a duplicate after 100 members: %v", err)
	}
}

// FuzzParse holds the walk to the checks it replaced (oracle_test.go).
func FuzzParse(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if d := agree(body); d != "" {
			t.Fatalf("%q: %s", body, d)
		}
	})
}

// BenchmarkParse: what a request's checks cost before the key is looked
// up, the walk against the passes it replaced (as the read and call paths
// ran them), for a read and a 1 KiB save.
func BenchmarkParse(b *testing.B) {
	save := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"save_report","arguments":{"path":"bench/1","mimeType":"text/markdown","text":"` +
		strings.Repeat("lorem ipsum ", 85) + `"},"_meta":{` + pv + `:"2026-07-28",` + caps + `:{}}}}`)
	read := []byte(seeds[1])
	for _, body := range [][]byte{read, save} {
		if d := agree(body); d != "" {
			b.Fatal(d)
		}
	}
	walk := func(b *testing.B, body []byte) {
		b.ReportAllocs()
		for b.Loop() {
			msgs, err := Parse(body)
			if err != nil || Check(&msgs[0]) != nil || !msgs[0].Fast.Read && !msgs[0].Fast.Call {
				b.Fatal("not fast")
			}
		}
	}
	b.Run("read/walk", func(b *testing.B) { walk(b, read) })
	b.Run("save1KiB/walk", func(b *testing.B) { walk(b, save) })
	b.Run("read/old", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			msgs, err := oldParse(read)
			_, ok := parseFastRead(read)
			if err != nil || oldCheck(&msgs[0]) != nil || !oldShallow(read, maxFastDepth) || !ok {
				b.Fatal("not fast")
			}
		}
	})
	b.Run("save1KiB/old", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			msgs, err := oldParse(save)
			c, ok := parseFastCall(save)
			if err != nil || oldCheck(&msgs[0]) != nil || !oldShallow(save, maxFastDepth) || !ok ||
				!oldNumbersFit(c.RawMeta) || !oldNumbersFit(c.Args) {
				b.Fatal("not fast")
			}
		}
	})
}
