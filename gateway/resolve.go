package gateway

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The front's side of spilling (spill.go): a result's placeholders found
// in the call's ticket are its spilled strings. The offloader saves a
// spilled part from its bytes; whatever is returned inline gets its
// strings back first (restore), so a caller never sees a placeholder.

// errBadSpill is a spilled base64 part that does not decode (go-sdk
// would have refused the whole answer).
var errBadSpill = errors.New("the upstream's answer holds base64 data that does not decode")

// spilledText is the text a content string stands for: its spilled bytes
// when it is a placeholder of t, else the string itself.
func spilledText(t *ticket, s string) []byte {
	if sp := t.spilled(s); sp != nil && sp.kind == spillText {
		return sp.raw
	}
	return []byte(s)
}

// textLen is the byte length of what s stands for.
func textLen(t *ticket, s string) int {
	if sp := t.spilled(s); sp != nil && sp.kind == spillText {
		return len(sp.raw)
	}
	return len(s)
}

// spilledData is the spill that decoded base64 data b stands for, or nil:
// a placeholder decodes to 33 bytes.
func spilledData(t *ticket, b []byte) *spill {
	if t == nil || len(b) != 33 {
		return nil
	}
	if sp := t.spilled(base64.StdEncoding.EncodeToString(b)); sp != nil && sp.kind == spillBase64 {
		return sp
	}
	return nil
}

// dataLen is the decoded length of the data b stands for.
func dataLen(t *ticket, b []byte) int {
	if sp := spilledData(t, b); sp != nil {
		return base64.StdEncoding.DecodedLen(len(sp.raw))
	}
	return len(b)
}

// decodeData is the data b stands for, decoded.
func decodeData(t *ticket, b []byte) ([]byte, error) {
	sp := spilledData(t, b)
	if sp == nil {
		return b, nil
	}
	raw := sp.raw
	if bytes.IndexByte(raw, '\\') >= 0 { // "\/": JSON escapes in base64
		n, ok := unescapeInPlace(raw)
		if !ok {
			return nil, errBadSpill
		}
		raw = raw[:n]
	}
	out := make([]byte, base64.StdEncoding.DecodedLen(len(raw)))
	n, err := base64.StdEncoding.Decode(out, raw)
	if err != nil {
		return nil, errBadSpill
	}
	sp.raw = nil // decoded: the base64 is not needed again
	return out[:n], nil
}

// structuredJSON is the JSON of a structuredContent whose strings may be
// placeholders of t, with the spilled strings spliced back as they were
// sent.
func structuredJSON(t *ticket, v any) ([]byte, error) {
	skel, err := json.Marshal(v)
	if err != nil || t == nil {
		return skel, err
	}
	t.mu.Lock()
	var found []spliceAt
	for key, sp := range t.spills {
		if sp.kind != spillJSON {
			continue
		}
		if i := bytes.Index(skel, []byte(`"`+key+`"`)); i >= 0 {
			found = append(found, spliceAt{i + 1, sp})
		}
	}
	t.mu.Unlock()
	if len(found) == 0 {
		return skel, nil
	}
	slices.SortFunc(found, func(a, b spliceAt) int { return a.at - b.at })
	n := len(skel)
	for _, f := range found {
		n += len(f.sp.raw) - placeholderLen
	}
	out := make([]byte, 0, n)
	last := 0
	for _, f := range found {
		out = append(append(out, skel[last:f.at]...), f.sp.raw...)
		last = f.at + placeholderLen
	}
	return append(out, skel[last:]...), nil
}

type spliceAt struct {
	at int
	sp *spill
}

// restore gives res back every spilled string of t, in place: what is
// returned inline is what the upstream sent.
func restore(t *ticket, res *mcp.CallToolResult) error {
	if t == nil {
		return nil
	}
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			c.Text = string(spilledText(t, c.Text))
		case *mcp.ImageContent:
			d, err := decodeData(t, c.Data)
			if err != nil {
				return err
			}
			c.Data = d
		case *mcp.AudioContent:
			d, err := decodeData(t, c.Data)
			if err != nil {
				return err
			}
			c.Data = d
		case *mcp.EmbeddedResource:
			if r := c.Resource; r != nil {
				r.Text = string(spilledText(t, r.Text))
				if r.Blob != nil {
					d, err := decodeData(t, r.Blob)
					if err != nil {
						return err
					}
					r.Blob = d
				}
			}
		}
	}
	if res.StructuredContent != nil {
		v, err := restoreValue(t, res.StructuredContent)
		if err != nil {
			return err
		}
		res.StructuredContent = v
	}
	return nil
}

// restoreValue is v (decoded JSON) with its placeholder strings replaced
// by the strings they stand for.
func restoreValue(t *ticket, v any) (any, error) {
	switch v := v.(type) {
	case string:
		if sp := t.spilled(v); sp != nil && sp.kind == spillJSON {
			var s string
			if err := json.Unmarshal(append(append([]byte{'"'}, sp.raw...), '"'), &s); err != nil {
				return nil, err
			}
			return s, nil
		}
	case map[string]any:
		for k, e := range v {
			r, err := restoreValue(t, e)
			if err != nil {
				return nil, err
			}
			v[k] = r
		}
	case []any:
		for i, e := range v {
			r, err := restoreValue(t, e)
			if err != nil {
				return nil, err
			}
			v[i] = r
		}
	}
	return v, nil
}
