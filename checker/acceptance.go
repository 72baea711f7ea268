package checker

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// The acceptance layer runs the rows of the acceptance sheet (seed 000)
// against the fixture tools described in docs/fixtures.md.

const markerPrefix = "RSD-FIXTURE-"

// contentBytes returns the body of a text or blob content.
func contentBytes(text, blob *string) ([]byte, error) {
	switch {
	case text != nil:
		return []byte(*text), nil
	case blob != nil:
		b, err := base64.StdEncoding.DecodeString(*blob)
		if err != nil {
			return nil, fmt.Errorf("blob is not base64: %v", err)
		}
		return b, nil
	}
	return nil, errors.New("content has neither text nor blob")
}

// fixtureDoc is the search result every form carries.
type fixtureDoc struct {
	Marker string `json:"marker"`
	Query  string `json:"query"`
	Total  *int   `json:"total"`
	Hits   []any  `json:"hits"`
}

func parseDoc(b []byte) (*fixtureDoc, error) {
	var d fixtureDoc
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("not the JSON search result: %v", err)
	}
	return &d, nil
}

type acceptanceRun struct {
	*run
	docs      map[string]*fixtureDoc  // by row: T01, S01, E01, L02
	linkItems map[string]*contentItem // the resource_link of each link fixture
}

func (r *run) acceptance(ctx context.Context) {
	if !r.hasTools("search_text", "search_structured", "search_embedded", "search_link") {
		r.skipLayer(LayerAcceptance, "the server has no fixture tools search_text/_structured/_embedded/_link (docs/fixtures.md; resourced: fixtures: true)")
		return
	}
	a := &acceptanceRun{run: r, docs: map[string]*fixtureDoc{}}
	a.t01(ctx)
	s01 := a.s01(ctx)
	a.e01(ctx)
	linkURI := a.l01(ctx)
	a.l02(ctx, linkURI)
	a.a01(ctx, linkURI)
	a.a02()
	a.a03(s01)
	a.a04(ctx)
	a.probes(ctx)
}

// call calls a fixture tool with {} and fails row on a transport error or
// an error result.
func (a *acceptanceRun) call(ctx context.Context, row, tool string) *toolCall {
	if !a.hasTools(tool) {
		a.fail(row, "no %s tool", tool)
		return nil
	}
	tc, err := a.callTool(ctx, tool, map[string]any{})
	if err != nil {
		a.fail(row, "%s: %v", tool, err)
		return nil
	}
	if strings.HasPrefix(tool, "probe_") {
		tc.deliberate = true
	}
	if tc.res == nil {
		a.fail(row, "%s", tc.describe())
		return nil
	}
	if tc.res.IsError && tool != "probe_error" {
		a.fail(row, "%s", tc.describe())
		return nil
	}
	return tc
}

func (a *acceptanceRun) t01(ctx context.Context) {
	tc := a.call(ctx, "T01", "search_text")
	if tc == nil {
		return
	}
	var p []string
	texts := tc.texts()
	if len(tc.res.Content) != 1 || len(texts) != 1 {
		p = append(p, fmt.Sprintf("%d content items (%d text), want one text item", len(tc.res.Content), len(texts)))
	}
	if tc.res.HasStructured {
		p = append(p, "has structuredContent")
	}
	if len(texts) > 0 {
		d, err := parseDoc([]byte(texts[0]))
		switch {
		case err != nil:
			p = append(p, err.Error())
		case d.Marker != markerPrefix+"T01":
			p = append(p, fmt.Sprintf("marker %q, want %sT01", d.Marker, markerPrefix))
		default:
			a.docs["T01"] = d
		}
	}
	a.checkProblems("T01", p, fmt.Sprintf("one text item, %d bytes of JSON with marker T01", len(strings.Join(texts, ""))))
}

// s01 returns the search_structured call for A03.
func (a *acceptanceRun) s01(ctx context.Context) *toolCall {
	tc := a.call(ctx, "S01", "search_structured")
	if tc == nil {
		return nil
	}
	var p []string
	t := a.tools["search_structured"]
	switch {
	case !tc.res.HasStructured:
		p = append(p, "no structuredContent")
	case t.output == nil:
		p = append(p, "no (valid) outputSchema")
	default:
		v, _ := decodeJSONNumber(tc.res.Structured)
		if err := t.output.Validate(v); err != nil {
			p = append(p, "structuredContent does not validate against the outputSchema: "+oneLine(err.Error()))
		}
	}
	texts := tc.texts()
	if len(texts) != 1 {
		p = append(p, fmt.Sprintf("%d text items, want 1", len(texts)))
	} else if tc.res.HasStructured {
		var compact bytes.Buffer
		_ = json.Compact(&compact, tc.res.Structured)
		if texts[0] != compact.String() {
			if m := textMismatch(tc); m != "" {
				p = append(p, m)
			} else {
				p = append(p, "text equals structuredContent as JSON but not byte for byte")
			}
		}
	}
	if tc.res.HasStructured {
		if d, err := parseDoc(tc.res.Structured); err != nil {
			p = append(p, err.Error())
		} else if d.Marker != markerPrefix+"S01" {
			p = append(p, fmt.Sprintf("marker %q, want %sS01", d.Marker, markerPrefix))
		} else {
			a.docs["S01"] = d
		}
	}
	a.checkProblems("S01", p, "structuredContent validates against the outputSchema; text is byte-equal to JSON(structuredContent); marker S01")
	return tc
}

// embedded returns the one embedded resource of a call.
func embedded(tc *toolCall) (*contentItem, error) {
	var found *contentItem
	for i, c := range tc.res.Content {
		if c.Type == "resource" {
			if found != nil {
				return nil, errors.New("more than one embedded resource")
			}
			found = &tc.res.Content[i]
		}
	}
	if found == nil || found.Resource == nil {
		return nil, errors.New("no embedded resource item")
	}
	if found.Resource.URI == "" || found.Resource.MIMEType == "" {
		return nil, errors.New("the embedded resource lacks uri or mimeType")
	}
	return found, nil
}

func (a *acceptanceRun) e01(ctx context.Context) {
	var p, ev []string
	for _, f := range []struct {
		tool, marker string
		doc          bool
	}{
		{"search_embedded", "E01", true},
		{"probe_embedded_text", "E11", false},
		{"probe_embedded_blob", "E21", false},
	} {
		if f.tool != "search_embedded" && !a.hasTools(f.tool) {
			continue
		}
		tc := a.call(ctx, "E01", f.tool)
		if tc == nil {
			return
		}
		item, err := embedded(tc)
		if err != nil {
			p = append(p, f.tool+": "+err.Error())
			continue
		}
		body, err := contentBytes(item.Resource.Text, item.Resource.Blob)
		if err != nil {
			p = append(p, f.tool+": "+err.Error())
			continue
		}
		if !bytes.Contains(body, []byte(markerPrefix+f.marker)) {
			p = append(p, fmt.Sprintf("%s: the embedded body has no marker %s", f.tool, f.marker))
		}
		if f.doc {
			if d, err := parseDoc(body); err != nil {
				p = append(p, f.tool+": "+err.Error())
			} else {
				a.docs["E01"] = d
			}
		}
		res, _, err := a.read(ctx, item.Resource.URI)
		if err != nil {
			p = append(p, f.tool+": reading it back: "+err.Error())
			continue
		}
		back, err := contentBytesOf(res)
		if err != nil || !bytes.Equal(back, body) {
			p = append(p, fmt.Sprintf("%s: resources/read %s gives other bytes than the embedded body", f.tool, item.Resource.URI))
			continue
		}
		form := "text"
		if item.Resource.Blob != nil {
			form = "blob"
		}
		ev = append(ev, fmt.Sprintf("%s %s %d bytes = read", f.tool, form, len(body)))
	}
	a.checkProblems("E01", p, strings.Join(ev, "; "))
}

// link returns the one resource_link of a call, checking it carries no
// body.
func link(tc *toolCall, bodyMarker string) (*contentItem, []string) {
	var found *contentItem
	var p []string
	for i, c := range tc.res.Content {
		switch c.Type {
		case "resource_link":
			if found == nil {
				found = &tc.res.Content[i]
			}
		case "resource":
			p = append(p, "an embedded resource next to the link")
		}
	}
	if bodyMarker != "" && strings.Contains(string(tc.x.Result), markerPrefix+bodyMarker) {
		p = append(p, "the result contains the body marker "+bodyMarker)
	}
	if found == nil {
		return nil, append(p, "no resource_link item")
	}
	if found.URI == "" || found.Name == "" || found.MIMEType == "" || found.Size == nil {
		p = append(p, fmt.Sprintf("resource_link lacks one of uri %q, name %q, mimeType %q, size %s", found.URI, found.Name, found.MIMEType, ptrString(found.Size)))
	}
	return found, p
}

type probeLink struct {
	tool, descMarker, bodyMarker string
	listed                       bool
}

// linkFixtures are the resource_link fixtures.
var linkFixtures = []probeLink{
	{tool: "search_link", descMarker: "L01", bodyMarker: "L02"},
	{tool: "probe_link_listed", descMarker: "L11", bodyMarker: "L12", listed: true},
	{tool: "probe_link_unlisted", descMarker: "L21", bodyMarker: "L22"},
}

// l01 returns the search_link URI.
func (a *acceptanceRun) l01(ctx context.Context) (searchLink string) {
	a.linkItems = map[string]*contentItem{}
	var p, ev []string
	for _, f := range linkFixtures {
		if f.tool != "search_link" && !a.hasTools(f.tool) {
			continue
		}
		tc := a.call(ctx, "L01", f.tool)
		if tc == nil {
			return ""
		}
		item, probs := link(tc, f.bodyMarker)
		for _, pr := range probs {
			p = append(p, f.tool+": "+pr)
		}
		if item == nil {
			continue
		}
		if !strings.Contains(item.Description, markerPrefix+f.descMarker) {
			p = append(p, fmt.Sprintf("%s: description has no marker %s", f.tool, f.descMarker))
		}
		if tc.res.HasStructured {
			p = append(p, f.tool+": has structuredContent")
		}
		a.linkItems[f.tool] = item
		ev = append(ev, fmt.Sprintf("%s → %s (%s, %s bytes)", f.tool, item.URI, item.MIMEType, ptrString(item.Size)))
		if f.tool == "search_link" {
			searchLink = item.URI
		}
	}
	a.checkProblems("L01", p, "no body; "+strings.Join(ev, "; "))
	return searchLink
}

func (a *acceptanceRun) l02(ctx context.Context, searchLink string) {
	if len(a.linkItems) == 0 {
		a.skip("L02", "no resource_link from L01")
		return
	}
	all, err := a.resourcesList(ctx)
	if err != nil {
		a.fail("L02", "%v", err)
		return
	}
	listed := map[string]bool{}
	for _, l := range all {
		listed[l.URI] = true
	}
	var p, ev []string
	for _, f := range linkFixtures {
		item := a.linkItems[f.tool]
		if item == nil {
			continue
		}
		if listed[item.URI] != f.listed {
			p = append(p, fmt.Sprintf("%s: %s in resources/list = %v, want %v", f.tool, item.URI, listed[item.URI], f.listed))
		}
		res, _, err := a.read(ctx, item.URI)
		if err != nil {
			p = append(p, err.Error())
			continue
		}
		if msg := cacheFields(res); msg != "" {
			p = append(p, item.URI+": "+msg)
		}
		body, err := contentBytesOf(res)
		if err != nil {
			p = append(p, item.URI+": "+err.Error())
			continue
		}
		if !bytes.Contains(body, []byte(markerPrefix+f.bodyMarker)) {
			p = append(p, fmt.Sprintf("%s: body has no marker %s", item.URI, f.bodyMarker))
		}
		if item.Size == nil || *item.Size != int64(len(body)) {
			p = append(p, fmt.Sprintf("%s: link size %s ≠ %d body bytes", item.URI, ptrString(item.Size), len(body)))
		}
		if sum := res.Contents[0].Meta["sha256"]; sum != sha256Hex(body) {
			p = append(p, fmt.Sprintf("%s: _meta.sha256 %v does not match the body", item.URI, sum))
		}
		if f.tool == "search_link" {
			if d, err := parseDoc(body); err != nil {
				p = append(p, item.URI+": "+err.Error())
			} else {
				a.docs["L02"] = d
			}
		}
		state := "unlisted"
		if f.listed {
			state = "listed"
		}
		ev = append(ev, fmt.Sprintf("%s (%s) %d bytes, sha256 ok", item.URI, state, len(body)))
	}
	a.checkProblems("L02", p, strings.Join(ev, "; "))
}

func (a *acceptanceRun) a01(ctx context.Context, searchLink string) {
	uri := "search://fixtures/results/fixture-missing"
	if searchLink != "" {
		uri = searchLink[:strings.LastIndex(searchLink, "/")+1] + "fixture-missing"
	}
	ne, err := a.readNotFound(ctx, uri)
	switch {
	case err != nil:
		a.fail("A01", "%v", err)
	case ne.problem != "":
		a.fail("A01", "%s", ne.problem)
	case ne.err.Code != -32602:
		a.fail("A01", "%s → error %d %q, want -32602", uri, ne.err.Code, ne.err.Message)
	case ne.dataURI == nil || *ne.dataURI != uri:
		a.fail("A01", "%s → error data %s, want data.uri %q", uri, orNone(ne.err.Data), uri)
	default:
		a.pass("A01", "%s → error -32602 %q, data.uri as sent", uri, ne.err.Message)
	}
}

// a02 compares the four forms' documents.
func (a *acceptanceRun) a02() {
	var p []string
	var ref *fixtureDoc
	var refRow string
	for _, row := range []string{"T01", "S01", "E01", "L02"} {
		d := a.docs[row]
		if d == nil {
			p = append(p, "no document from "+row)
			continue
		}
		if d.Total == nil || *d.Total != len(d.Hits) {
			p = append(p, fmt.Sprintf("%s: total %s ≠ %d hits", row, ptrIntString(d.Total), len(d.Hits)))
		}
		if ref == nil {
			ref, refRow = d, row
			continue
		}
		if d.Query != ref.Query || !reflect.DeepEqual(d.Hits, ref.Hits) || ptrIntString(d.Total) != ptrIntString(ref.Total) {
			p = append(p, fmt.Sprintf("%s's {query,total,hits} differs from %s's", row, refRow))
		}
	}
	if ref == nil {
		a.fail("A02", "%s", strings.Join(p, "; "))
		return
	}
	a.checkProblems("A02", p, fmt.Sprintf("T01, S01, E01 and L02 carry the same {query %q, total %d, %d hits}", ref.Query, *ref.Total, len(ref.Hits)))
}

// a03 mutates S01's value: a type error the schema must catch, and a
// meaning error only the semantic check catches.
func (a *acceptanceRun) a03(s01 *toolCall) {
	t := a.tools["search_structured"]
	if s01 == nil || !s01.res.HasStructured || t == nil || t.output == nil {
		a.skip("A03", "no S01 value and outputSchema to mutate")
		return
	}
	mutate := func(total any) (schemaErr error, semanticOK bool) {
		v, _ := decodeJSONNumber(s01.res.Structured)
		m, ok := v.(map[string]any)
		if !ok {
			return errors.New("not an object"), false
		}
		switch total := total.(type) {
		case int:
			m["total"] = json.Number(fmt.Sprint(total))
		default:
			m["total"] = total
		}
		hits, _ := m["hits"].([]any)
		n, isNum := m["total"].(json.Number)
		return t.output.Validate(m), isNum && n.String() == fmt.Sprint(len(hits))
	}
	var p []string
	if err, _ := mutate("2"); err == nil {
		p = append(p, "the outputSchema accepts total \"2\"")
	}
	err999, sem999 := mutate(999)
	if sem999 {
		p = append(p, "the semantic check accepts total 999 with 2 hits")
	}
	ev := "total \"2\" fails the outputSchema; total 999 passes it and fails the semantic check (total ≠ number of hits)"
	if err999 != nil {
		ev = "total \"2\" fails the outputSchema; total 999 fails the outputSchema too and the semantic check"
	}
	a.checkProblems("A03", p, ev)
}

func (a *acceptanceRun) a04(ctx context.Context) {
	if !a.hasTools("probe_text_differs") {
		a.skip("A04", "no probe_text_differs tool")
		return
	}
	tc := a.call(ctx, "A04", "probe_text_differs")
	if tc == nil {
		return
	}
	var p []string
	t := a.tools["probe_text_differs"]
	switch {
	case !tc.res.HasStructured:
		p = append(p, "no structuredContent")
	case t.output == nil:
		p = append(p, "no outputSchema")
	default:
		v, _ := decodeJSONNumber(tc.res.Structured)
		if err := t.output.Validate(v); err != nil {
			p = append(p, "the schema rejects it: "+oneLine(err.Error()))
		}
	}
	mismatch := textMismatch(tc)
	if mismatch == "" {
		p = append(p, "text equals JSON(structuredContent): nothing to detect")
	}
	a.checkProblems("A04", p, "outputSchema passes; detected: "+mismatch)
}

// probes runs the observed rows P01–P05.
func (a *acceptanceRun) probes(ctx context.Context) {
	if tc := a.probe(ctx, "P01", "probe_structured_only"); tc != nil {
		sc := tc.structured()
		a.check("P01", len(tc.res.Content) == 0 && sc["marker"] == markerPrefix+"S02",
			"content [] and structuredContent with marker S02",
			fmt.Sprintf("%d content items, structuredContent marker %v", len(tc.res.Content), sc["marker"]))
	}
	if tc := a.probe(ctx, "P02", "probe_error"); tc != nil {
		msg, _ := tc.structured()["message"].(string)
		ok := tc.res.IsError && strings.Contains(strings.Join(tc.texts(), " "), markerPrefix+"X01") && strings.Contains(msg, markerPrefix+"X02")
		a.check("P02", ok, "isError; text X01, structuredContent.message X02 (differ on purpose)",
			fmt.Sprintf("isError %v, texts %q, message %q", tc.res.IsError, clip(strings.Join(tc.texts(), " "), 60), clip(msg, 60)))
	}
	if tc := a.probe(ctx, "P03", "probe_audience"); tc != nil {
		c := tc.res.Content
		ok := len(c) == 2 && c[0].Annotations != nil && slices.Equal(c[0].Annotations.Audience, []string{"user"}) &&
			strings.Contains(c[0].Text, markerPrefix+"A01") && c[1].Annotations != nil &&
			slices.Equal(c[1].Annotations.Audience, []string{"assistant"}) && strings.Contains(c[1].Text, markerPrefix+"A02")
		a.check("P03", ok, "A01 audience [user], A02 audience [assistant]", fmt.Sprintf("%d items, not A01/user then A02/assistant", len(c)))
	}
	a.sizeProbes(ctx)
	a.scProbes(ctx)
}

func (a *acceptanceRun) probe(ctx context.Context, row, tool string) *toolCall {
	if !a.hasTools(tool) {
		a.skip(row, "no %s tool", tool)
		return nil
	}
	return a.call(ctx, row, tool)
}

func (a *acceptanceRun) sizeProbes(ctx context.Context) {
	prefix := "report://fixtures/probe/"
	if it := a.linkItems["probe_link_listed"]; it != nil {
		prefix = it.URI[:strings.LastIndex(it.URI, "/")+1]
	}
	var p, ev []string
	for _, n := range []int{10, 40, 66, 155} {
		tool := fmt.Sprintf("probe_size_%dk", n)
		if !a.hasTools(tool) {
			continue
		}
		tc := a.call(ctx, "P04", tool)
		if tc == nil {
			return
		}
		texts := tc.texts()
		if len(texts) != 1 {
			p = append(p, fmt.Sprintf("%s: %d text items", tool, len(texts)))
			continue
		}
		text := texts[0]
		lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
		if len(text) != n*1000 {
			p = append(p, fmt.Sprintf("%s: %d bytes, want %d", tool, len(text), n*1000))
		}
		if !strings.Contains(lines[0], fmt.Sprintf("%sH%d", markerPrefix, n)) || !strings.Contains(lines[len(lines)-1], fmt.Sprintf("%sZ%d", markerPrefix, n)) {
			p = append(p, fmt.Sprintf("%s: first/last line lack H%d/Z%d", tool, n, n))
		}
		uri := fmt.Sprintf("%ssize-%dk.txt", prefix, n)
		if res, _, err := a.read(ctx, uri); err != nil {
			p = append(p, err.Error())
		} else if b, _ := contentBytesOf(res); string(b) != text {
			p = append(p, uri+" differs from the text")
		}
		ev = append(ev, fmt.Sprintf("%dk", n))
	}
	if len(ev) == 0 && len(p) == 0 {
		a.skip("P04", "no probe_size_* tools")
		return
	}
	a.checkProblems("P04", p, strings.Join(ev, ", ")+": exact sizes, H/Z markers, equal to the stored bodies")
}

func (a *acceptanceRun) scProbes(ctx context.Context) {
	var p, ev []string
	for i, f := range []struct{ tool, value string }{
		{"probe_sc_empty_array", "[]"}, {"probe_sc_empty_string", `""`}, {"probe_sc_zero", "0"},
		{"probe_sc_false", "false"}, {"probe_sc_null", "null"},
	} {
		if !a.hasTools(f.tool) {
			continue
		}
		tc := a.call(ctx, "P05", f.tool)
		if tc == nil {
			return
		}
		marker := fmt.Sprintf("%sV0%d", markerPrefix, i+1)
		if !strings.Contains(strings.Join(tc.texts(), " "), marker) {
			p = append(p, f.tool+": text lacks "+marker)
		}
		if a.c.version == V2026 {
			if !tc.res.HasStructured || strings.TrimSpace(string(tc.res.Structured)) != f.value {
				p = append(p, fmt.Sprintf("%s: structuredContent %s, want %s", f.tool, orNone(tc.res.Structured), f.value))
			}
		} else if tc.res.HasStructured {
			p = append(p, f.tool+": structuredContent present on 2025-11-25 (object only there)")
		}
		ev = append(ev, f.value)
	}
	if len(ev) == 0 && len(p) == 0 {
		a.skip("P05", "no probe_sc_* tools")
		return
	}
	if a.c.version == V2026 {
		a.checkProblems("P05", p, "structuredContent "+strings.Join(ev, " ")+" present (presence is !== undefined)")
	} else {
		a.checkProblems("P05", p, "structuredContent absent, text only (2025-11-25 allows only objects)")
	}
}

// decodeJSONNumber decodes JSON keeping numbers as json.Number, the form
// the schema validator takes.
func decodeJSONNumber(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	err := d.Decode(&v)
	return v, err
}
