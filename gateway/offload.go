package gateway

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/resourced/resourced/auth"
	"github.com/resourced/resourced/service"
	"github.com/resourced/resourced/store"
)

// Offloading (docs/gateway.md): a tools/call result whose content bytes
// exceed its upstream's threshold (or its tool's override) has each part
// larger than the preview saved through the service, under the caller's
// tenant, unlisted, in the gateway's scheme, at
// <tenant>/<upstream>/<tool>/<sha>/<n>: sha is the first 32 hex digits of
// the part's sha256 and n its index in content ("structuredContent" for
// that). The key follows from the bytes, so a re-issued call finds its
// parts saved already: a part is saved create-only, and a part that exists
// with the same sha256 is the same link, neither stored nor counted
// again. The part is replaced by a resource_link and, for text, a preview
// of its first PreviewChars characters; one text item before the rest
// says how large the result was and how to read the parts. Every part is
// saved, or none: a failed save removes the parts this call created (never
// one it found saved, which another call may be returning) and answers its
// failure (docs/decisions.md, "idempotent offload").
//
// The outputSchema decision: a large structuredContent is replaced by
// {"resourced":{uri,size,sha256,mimeType}} whether or not the tool
// declares an outputSchema, and tools/list lists every outputSchema of a
// tool that may be offloaded as {"anyOf":[<the upstream's>, <the
// pointer's>]} (listedOutputSchema), so every result validates against the
// schema the caller was given. Keeping structuredContent inline instead
// would leave the result as large as it was for tools that carry their
// whole answer there (server-filesystem's read_text_file returns the file
// as structuredContent.content too).

// textMIME is the media type of an offloaded text item.
const textMIME = "text/plain; charset=utf-8"

// contentBytes is a result's content size: text, decoded image, audio and
// embedded blobs, embedded text, and the JSON of structuredContent.
// The strings of t (the call's ticket) stand for what they spilled.
func contentBytes(t *ticket, res *mcp.CallToolResult, structured int64) int64 {
	var n int64
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			n += int64(textLen(t, c.Text))
		case *mcp.ImageContent:
			n += int64(dataLen(t, c.Data))
		case *mcp.AudioContent:
			n += int64(dataLen(t, c.Data))
		case *mcp.EmbeddedResource:
			if c.Resource != nil {
				n += int64(textLen(t, c.Resource.Text) + dataLen(t, c.Resource.Blob))
			}
		}
	}
	return n + structured
}

// shouldOffload applies an upstream's policy to a result of tool of size
// bytes.
func shouldOffload(pol OffloadPolicy, tool string, size int64) bool {
	if t, ok := pol.Tools[tool]; ok {
		switch t.Mode {
		case OffloadNever:
			return false
		case OffloadAlways:
			return size > 0
		case OffloadSize:
			return size > t.Threshold
		}
	}
	th := pol.Threshold
	if th <= 0 {
		th = DefaultThreshold
	}
	return size > th
}

// offloaded is what offload did: the result to return, how many parts it
// saved and their bytes.
type offloaded struct {
	result *mcp.CallToolResult
	parts  int
	bytes  int64
}

// savedPart is one saved part, for the note and for rollback.
type savedPart struct {
	key           store.Key
	uri, mimeType string
	size          int64
	preview       bool
	created       bool // by this call: false when it was found saved
}

// partSHA is how many hex digits of a part's sha256 its key holds (128
// bits: no two bodies a tenant saves share them).
const partSHA = 32

// offload saves the large parts of res, a result of upstream's tool
// (frontName as the caller named it) read under ticket t, when its policy
// says so; a result it does not offload gets its spilled strings back.
func (f *Front) offload(ctx context.Context, p auth.Principal, up, tool, frontName string, res *mcp.CallToolResult, t *ticket) (offloaded, *service.Failure) {
	o, fail := f.offloadParts(ctx, p, up, tool, frontName, res, t)
	if fail == nil && o.parts == 0 && restore(t, res) != nil {
		fail = service.Fail(service.KindUnavailable, "The upstream server "+up+" returned data that does not decode. Retry the same call later.")
	}
	return o, fail
}

func (f *Front) offloadParts(ctx context.Context, p auth.Principal, up, tool, frontName string, res *mcp.CallToolResult, t *ticket) (offloaded, *service.Failure) {
	var sc payload
	if res.StructuredContent != nil {
		var err error
		if sc, err = structured(t, res.StructuredContent); err != nil {
			return offloaded{}, service.Fail(service.KindUnavailable, "The upstream server "+up+" returned a structuredContent that cannot be encoded. Retry the same call later.")
		}
	}
	total := contentBytes(t, res, sc.size)
	if !shouldOffload(f.ups[up].Offload, tool, total) {
		return offloaded{}, nil
	}
	o := offloadRun{f: f, ctx: ctx, p: p, t: t, base: up + "/" + pathSegment(tool), tool: frontName, total: total}
	out := *res
	out.Content = make([]mcp.Content, 0, len(res.Content)+2)
	for i, c := range res.Content {
		items, fail := o.part(i, c)
		if fail != nil {
			o.rollback()
			return offloaded{}, fail
		}
		out.Content = append(out.Content, items...)
	}
	if res.StructuredContent != nil && sc.size > int64(f.preview) {
		r, fail := o.save("structuredContent", "application/json", sc, false, "structuredContent")
		if fail != nil {
			o.rollback()
			return offloaded{}, fail
		}
		// The pointer is the part's link (the note names it too): no
		// resource_link of its own, so each replaced content item has one.
		out.StructuredContent = map[string]any{"resourced": map[string]any{
			"uri": r.Value.URI, "size": r.Meta.Size, "sha256": r.Meta.SHA256, "mimeType": "application/json",
		}}
	} else if res.StructuredContent != nil {
		v, err := restoreValue(t, res.StructuredContent)
		if err != nil {
			o.rollback()
			return offloaded{}, o.undecodable()
		}
		out.StructuredContent = v
	}
	if len(o.saved) == 0 {
		return offloaded{}, nil
	}
	out.Content = append([]mcp.Content{&mcp.TextContent{Text: f.note(frontName, total, o.saved)}}, out.Content...)
	return offloaded{result: &out, parts: len(o.saved), bytes: o.bytes}, nil
}

// offloadRun is one result being offloaded.
type offloadRun struct {
	f     *Front
	ctx   context.Context
	p     auth.Principal
	t     *ticket // the call's: its placeholders stand for spilled strings
	base  string  // <upstream>/<tool>
	tool  string  // the tool as the caller named it
	total int64   // the result's content bytes
	saved []savedPart
	bytes int64 // of the parts this call stored
}

// part returns what replaces content item i: itself when it is small,
// else its link (and a preview for text). A small item keeps (gets back)
// its spilled strings.
func (o *offloadRun) part(i int, c mcp.Content) ([]mcp.Content, *service.Failure) {
	n := fmt.Sprint(i)
	switch c := c.(type) {
	case *mcp.TextContent:
		body, fail := o.text(&c.Text)
		if fail != nil || body.size == 0 {
			return []mcp.Content{c}, fail
		}
		pv := previewOf(body.head(utf8.UTFMax*o.f.preview), o.f.preview)
		r, fail := o.save(n, textMIME, body, true, "text")
		if fail != nil {
			return nil, fail
		}
		return []mcp.Content{link(r), &mcp.TextContent{Text: pv, Annotations: c.Annotations}}, nil
	case *mcp.ImageContent:
		return o.blob(n, c, &c.Data, c.MIMEType, "image")
	case *mcp.AudioContent:
		return o.blob(n, c, &c.Data, c.MIMEType, "audio")
	case *mcp.EmbeddedResource:
		if c.Resource == nil {
			return []mcp.Content{c}, nil
		}
		rc := c.Resource
		if rc.Blob != nil {
			return o.blob(n, c, &rc.Blob, rc.MIMEType, "embedded resource "+rc.URI)
		}
		body, fail := o.text(&rc.Text)
		if fail != nil || body.size == 0 {
			return []mcp.Content{c}, fail
		}
		mt := rc.MIMEType
		if mt == "" {
			mt = textMIME
		}
		pv := previewOf(body.head(utf8.UTFMax*o.f.preview), o.f.preview)
		r, fail := o.save(n, mt, body, true, "embedded resource "+rc.URI)
		if fail != nil {
			return nil, fail
		}
		return []mcp.Content{link(r), &mcp.TextContent{Text: pv}}, nil
	}
	return []mcp.Content{c}, nil
}

// text is the payload of a text to save; a zero payload when it is kept
// inline (at most preview characters), with *s then its spilled text.
func (o *offloadRun) text(s *string) (payload, *service.Failure) {
	sp := spilledText(o.t, *s)
	if sp == nil {
		if utf8.RuneCountInString(*s) <= o.f.preview {
			return payload{}, nil
		}
		return bytesPayload([]byte(*s)), nil
	}
	p, err := spillPayload(sp)
	if err != nil {
		return payload{}, o.undecodable()
	}
	if p.size <= int64(utf8.UTFMax*o.f.preview) { // may be within the preview: look
		b, err := sp.bytes()
		if err != nil {
			return payload{}, o.undecodable()
		}
		if utf8.RuneCount(b) <= o.f.preview {
			*s = string(b)
			return payload{}, nil
		}
		return bytesPayload(b), nil
	}
	return p, nil
}

// undecodable is the failure of a result holding a spilled string that
// does not decode (go-sdk would have refused the whole answer).
func (o *offloadRun) undecodable() *service.Failure {
	return service.Fail(service.KindUnavailable, "The result of "+o.tool+" holds a string or base64 data that does not decode, "+
		"so nothing of it was kept. Retry the same call later.")
}

// blob saves the data *d stands for, or keeps it inline (then decoded
// into *d) when it is at most preview bytes.
func (o *offloadRun) blob(n string, c mcp.Content, d *[]byte, mimeType, what string) ([]mcp.Content, *service.Failure) {
	var p payload
	if sp := spilledData(o.t, *d); sp != nil {
		var err error
		if p, err = spillPayload(sp); err != nil {
			return nil, o.undecodable()
		}
		if p.size <= int64(o.f.preview) {
			b, err := sp.bytes()
			if err != nil {
				return nil, o.undecodable()
			}
			*d = b
			return []mcp.Content{c}, nil
		}
	} else {
		if len(*d) <= o.f.preview {
			return []mcp.Content{c}, nil
		}
		p = bytesPayload(*d)
	}
	if mimeType == "" {
		mimeType = "application/octet-stream"
	}
	r, fail := o.save(n, mimeType, p, false, what)
	if fail != nil {
		return nil, fail
	}
	return []mcp.Content{link(r)}, nil
}

// save stores one part, or finds it stored by an earlier call with the
// same bytes. A media type the service refuses is saved as text/plain or
// application/octet-stream: the bytes matter more than the label.
func (o *offloadRun) save(n, mimeType string, body payload, text bool, what string) (*service.Result, *service.Failure) {
	if service.CheckMIMEType("mimeType", mimeType) != nil {
		mimeType = "application/octet-stream"
		if text {
			mimeType = textMIME
		}
	}
	sha := hex.EncodeToString(body.sum[:])
	path := o.base + "/" + sha[:partSHA] + "/" + n
	req := service.SaveRequest{
		Path:     path,
		MIMEType: mimeType,
		Title:    service.Truncate(what+" of "+o.base, 200),
		Body:     body.body,
		Cond:     store.CreateOnly(),
		Scheme:   o.f.scheme,
	}
	var (
		r       *service.Result
		fail    *service.Failure
		created bool
	)
	for attempt := 0; ; attempt++ {
		if body.open != nil {
			req.Stream, req.Size = body.open(), body.size // a fresh stream for each attempt
		}
		r, fail = o.f.svc.Save(o.ctx, o.p.Tenant, req)
		if created = fail == nil; created || fail.ErrorKind != service.KindConflict && fail.ErrorKind != service.KindQuota {
			break
		}
		// It exists (or the quota is full, which a driver may judge
		// before the existence): the same part, when it has these bytes.
		saveFail := fail
		r, fail = o.found(path, sha)
		if fail == nil {
			break
		}
		if saveFail.ErrorKind == service.KindQuota {
			fail = saveFail
			break
		}
		if fail.ErrorKind != service.KindNotFound || attempt > 0 {
			break
		}
		// Removed between the save and the look (another call's
		// rollback, or its expiry): save it once more.
	}
	if fail != nil {
		return nil, o.failure(fail, body.size)
	}
	if body.done != nil {
		body.done()
	}
	o.saved = append(o.saved, savedPart{key: r.Meta.Key, uri: r.Value.URI, mimeType: r.Meta.MIMEType, size: r.Meta.Size, preview: text, created: created})
	if created {
		o.bytes += r.Meta.Size
	}
	return r, nil
}

// found is the part at path that a create-only save found there: the
// same part when its sha256 is sha, not_found when it is gone.
func (o *offloadRun) found(path, sha string) (*service.Result, *service.Failure) {
	m, fail := o.f.svc.Stat(o.ctx, o.p.Tenant, o.f.scheme+"://"+o.p.Tenant+"/"+path)
	switch {
	case fail != nil:
		return nil, fail
	case m.SHA256 != sha:
		// 128 bits of the sha256 agree and the bodies do not: not a
		// thing that happens, but never a link to other bytes.
		return nil, service.Fail(service.KindUnavailable, "an offloaded part's key holds other bytes")
	}
	return &service.Result{Meta: m, Value: service.MetaValue("found", &m)}, nil
}

// failure is the caller's text for a part of size bytes that could not be
// saved. The service's own texts speak to a caller that saves resources
// itself (delete some with list_resources and delete_resource, split the
// body, usage counts); a gateway caller saved nothing, sees no such
// tools, and the counts would be taken before the rollback. So: what
// happened, and what the caller can do about it.
func (o *offloadRun) failure(fail *service.Failure, size int64) *service.Failure {
	what := fmt.Sprintf("The result of %s is %s, too large to return inline", o.tool, sizeWords(o.total))
	switch fail.ErrorKind {
	case service.KindQuota:
		return service.Fail(service.KindQuota, what+", and saving it would take your tenant over its storage quota, "+
			"so nothing of it was kept. Call the tool for less (a narrower query, a smaller range, fewer items), "+
			"or ask the operator of this gateway for a larger quota or to free space; the same call fails again until then.")
	case service.KindTooLarge:
		limit := ""
		if sc := o.f.svc.Schemes()[o.f.scheme]; sc != nil {
			limit = fmt.Sprintf(" at most %s", sizeWords(sc.MaxBytes))
		}
		return service.Fail(service.KindTooLarge, fmt.Sprintf("%s; one of its parts is %s, and the gateway keeps%s per part (%s://), "+
			"so nothing of it was kept. Call the tool for less (a narrower query, a smaller range, fewer items), "+
			"or ask the operator of this gateway to raise schemes.%s.maxBytes; the same call fails again until then.",
			what, sizeWords(size), limit, o.f.scheme, o.f.scheme))
	case service.KindUnavailable:
		return service.Fail(service.KindUnavailable, what+", and the storage that keeps such results is unavailable, "+
			"so nothing of it was kept. Retry the same call later.")
	}
	f := *fail
	f.Message = what + ", and it could not be saved: " + fail.Message
	return &f
}

// rollback removes the parts this call saved: a result is offloaded whole
// or not at all. A part it found saved stays: the call that saved it, or
// another that found it too, may be returning its link.
func (o *offloadRun) rollback() {
	ctx := context.WithoutCancel(o.ctx)
	for _, s := range o.saved {
		if !s.created {
			continue
		}
		if fail := o.f.svc.DeleteKey(ctx, s.key); fail != nil {
			o.f.log.WarnContext(ctx, "removing an offloaded part after a failed save", "uri", s.uri, "errorKind", fail.ErrorKind)
		}
	}
	o.saved = nil
}

// link is the resource_link of a saved part.
func link(r *service.Result) *mcp.ResourceLink {
	size := r.Meta.Size
	return &mcp.ResourceLink{
		URI:      r.Value.URI,
		Name:     r.Value.Name,
		MIMEType: r.Meta.MIMEType,
		Size:     &size,
		Meta:     mcp.Meta{"sha256": r.Meta.SHA256},
	}
}

// previewOf is the first n characters of b, never splitting a UTF-8
// character.
func previewOf(b []byte, n int) string {
	for i, j := 0, 0; j < len(b); i++ {
		if i == n {
			return string(b[:j])
		}
		_, size := utf8.DecodeRune(b[j:])
		j += size
	}
	return string(b)
}

// pathSegment makes a tool name a path segment of the URI grammar
// (A-Z a-z 0-9 . _ ~ -), at most 128 bytes: each other character (not
// byte) becomes one '-'.
func pathSegment(name string) string {
	b := make([]byte, 0, len(name))
	for _, c := range name {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '~' || c == '-' {
			b = append(b, byte(c))
		} else {
			b = append(b, '-')
		}
	}
	s := string(b)
	if len(s) > 128 {
		s = s[:128]
	}
	if s == "" || s == "." || s == ".." {
		return "tool"
	}
	return s
}

// note is the text item that says, in plain words, how large the result
// was and how to read its saved parts.
func (f *Front) note(tool string, total int64, parts []savedPart) string {
	var b strings.Builder
	fmt.Fprintf(&b, "The result of %s was %s, too large to return inline, so ", tool, sizeWords(total))
	if len(parts) == 1 {
		b.WriteString("its large part was saved and is linked below: ")
	} else {
		fmt.Fprintf(&b, "its %d large parts were saved and are linked below: ", len(parts))
	}
	for i, s := range parts {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s (%s, %s", s.uri, s.mimeType, sizeWords(s.size))
		if s.preview {
			fmt.Fprintf(&b, ", its first %d characters follow the link", f.preview)
		}
		b.WriteString(")")
	}
	fmt.Fprintf(&b, ". Read a part whole with resources/read of its URI, or in windows with the read_resource tool: "+
		`{"uri": "%s", "offset": 0}, then again with offset set to the nextOffset it returns until nextOffset is absent `+
		"(for text, startLine and lineCount choose lines instead).", parts[0].uri)
	return b.String()
}

// sizeWords is n bytes in words: "2097152 bytes (2.0 MiB)".
func sizeWords(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%d bytes (%.1f MiB)", n, float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%d bytes (%.1f KiB)", n, float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// pointerSchema is the JSON Schema of the value that replaces a large
// structuredContent.
func pointerSchema() map[string]any {
	return map[string]any{
		"type":                 "object",
		"description":          "The structuredContent was too large to return inline and was saved: read it with resources/read of uri, or read_resource.",
		"additionalProperties": false,
		"required":             []any{"resourced"},
		"properties": map[string]any{"resourced": map[string]any{
			"type":                 "object",
			"additionalProperties": false,
			"required":             []any{"uri", "size", "sha256", "mimeType"},
			"properties": map[string]any{
				"uri":      map[string]any{"type": "string"},
				"size":     map[string]any{"type": "integer", "minimum": 0},
				"sha256":   map[string]any{"type": "string", "pattern": "^[0-9a-f]{64}$"},
				"mimeType": map[string]any{"const": "application/json"},
			},
		}},
	}
}

// listedOutputSchema is the outputSchema tools/list gives for an
// upstream's tool: the upstream's, widened to admit the pointer that
// replaces a large structuredContent, unless the tool is never offloaded.
// The upstream's "$schema", "$defs" and "definitions" move to the root,
// where its "#/$defs/…" references still find them (a schema with an
// "$id" is a resource of its own and stays whole).
func (f *Front) listedOutputSchema(up string, t *mcp.Tool) any {
	if t.OutputSchema == nil {
		return nil
	}
	if o, ok := f.ups[up].Offload.Tools[t.Name]; ok && o.Mode == OffloadNever {
		return t.OutputSchema
	}
	b, err := json.Marshal(t.OutputSchema)
	if err != nil {
		return t.OutputSchema
	}
	var inner map[string]any
	if json.Unmarshal(b, &inner) != nil {
		return t.OutputSchema // a boolean schema: true admits the pointer, false admits nothing anyway
	}
	out := map[string]any{}
	if _, hasID := inner["$id"]; !hasID {
		for _, k := range []string{"$schema", "$defs", "definitions"} {
			if v, ok := inner[k]; ok {
				out[k] = v
				delete(inner, k)
			}
		}
	}
	if inner["type"] == "object" {
		out["type"] = "object" // hosts read the root's type
	}
	out["anyOf"] = []any{inner, pointerSchema()}
	return out
}
