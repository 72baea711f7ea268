package service

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/resourced/resourced/index"
	"github.com/resourced/resourced/internal/jsonwire"
	"github.com/resourced/resourced/toolapi"
)

// search and fetch: the pair ChatGPT's deep research and company knowledge
// call (OpenAI's MCP contract; the source is cited in docs/decisions.md).
// Both go through what search_resources and read_resource go through: the
// same index, the same per-tenant slots, the same read decision.

// deepSearchLimit is how many results search returns.
const deepSearchLimit = 20

// DeepSearch is search: the query as search_resources reads it, and, when
// that finds nothing or holds more words than a query may (a question in
// plain words), any of its words, best first, with its exclusions kept.
// Each result's id and url are the resource's URI. The query is required
// and at most index.MaxQueryBytes long, as the tool's input schema says.
func (s *Service) DeepSearch(ctx context.Context, tenant string, a *toolapi.DeepSearchArgs) (*toolapi.DeepSearchResult, *Failure) {
	if strings.TrimSpace(a.Query) == "" {
		return nil, InvalidField("query", "is required: the words to search the stored resources for")
	}
	if len(a.Query) > index.MaxQueryBytes {
		return nil, InvalidField("query", fmt.Sprintf("is %d bytes long, at most %d", len(a.Query), index.MaxQueryBytes))
	}
	limit := deepSearchLimit
	r, f := s.SearchResources(ctx, tenant, &toolapi.SearchResourcesArgs{Query: a.Query, Limit: &limit})
	if f == nil && len(r.Value.Hits) == 0 || f != nil && f.ErrorKind == KindValidation {
		if words := anyWords(a.Query); words != "" && words != a.Query {
			if r2, f2 := s.SearchResources(ctx, tenant, &toolapi.SearchResourcesArgs{Query: words, Limit: &limit}); f2 == nil {
				r, f = r2, nil
			} else if f == nil || f2.ErrorKind != KindValidation {
				f = f2
			}
		}
	}
	if f != nil {
		return nil, f
	}
	v := &toolapi.DeepSearchResult{Results: make([]toolapi.DeepSearchHit, 0, len(r.Value.Hits))}
	for _, h := range r.Value.Hits {
		title := h.Title
		if title == "" {
			title = h.URI[strings.Index(h.URI, "://")+3:]
		}
		v.Results = append(v.Results, toolapi.DeepSearchHit{ID: h.URI, Title: title, URL: h.URI})
	}
	return v, nil
}

// anyWords rewrites q as its distinct words as alternatives ("a or b or
// c"), followed by q's exclusions (-word, -"a phrase") as written, within
// index.MaxTerms: when q has more words than that, the longest are kept
// (the short ones of a question are its least telling), in q's order. It
// is "" when q does not parse or has no word that is not excluded: then
// there is nothing to fall back to, and search answers as
// search_resources did.
func anyWords(q string) string {
	e, err := index.Parse(q)
	if err != nil || e == nil {
		return ""
	}
	var not []string
	room := index.MaxTerms
	for _, p := range e.Not {
		not = append(not, "-"+p.Websearch())
		room -= len(p)
	}
	words := slices.DeleteFunc(e.Words(), func(w string) bool { return w == "or" })
	byLength := slices.Clone(words)
	slices.SortStableFunc(byLength, func(a, b string) int { return utf8.RuneCountInString(b) - utf8.RuneCountInString(a) })
	// " or " between words can make the rewrite longer than q: keep fewer
	// words until it fits.
	for ; room > 0; room-- {
		kept := words
		if len(words) > room {
			keep := map[string]bool{}
			for _, w := range byLength[:room] {
				keep[w] = true
			}
			kept = slices.DeleteFunc(slices.Clone(words), func(w string) bool { return !keep[w] })
		}
		if len(kept) == 0 {
			return ""
		}
		if out := strings.Join(append([]string{strings.Join(kept, " or ")}, not...), " "); len(out) <= index.MaxQueryBytes {
			return out
		}
	}
	return ""
}

// Fetch is fetch: the resource a.ID names, if tenant may read it (the one
// read decision: unknown, expired, deleted and another tenant's private
// resource are the same not_found), with its text whole up to the
// server's result limit (Limits.MaxReadChars, as read_resource's), and
// where to read on when it is cut.
func (s *Service) Fetch(ctx context.Context, tenant string, a *toolapi.FetchArgs) (*toolapi.FetchResult, *Failure) {
	if a.ID == "" {
		return nil, InvalidField("id", "is required: the id of a search result (a resource URI, e.g. \"report://<tenant>/<path>\")")
	}
	m, body, f := s.Open(ctx, tenant, a.ID)
	if f != nil {
		if f.ErrorKind == KindValidation && len(f.FieldErrors) == 1 && f.FieldErrors[0].Field == "uri" {
			return nil, InvalidField("id", f.FieldErrors[0].Message)
		}
		return nil, f
	}
	defer body.Close()
	title := m.Title
	if title == "" {
		title = m.Key.Path()
	}
	v := &toolapi.FetchResult{ID: a.ID, Title: title, URL: a.ID, Metadata: toolapi.FetchMetadata{
		MIMEType: m.MIMEType, Size: m.Size, SHA256: m.SHA256,
		CreatedAt: jsonwire.FormatTime(m.Created), LastModified: jsonwire.FormatTime(m.Modified),
	}}
	if !m.Expires.IsZero() {
		v.Metadata.ExpiresAt = jsonwire.FormatTime(m.Expires)
	}
	if !jsonwire.TextType(m.MIMEType) {
		v.Text = fmt.Sprintf("[%s is a binary body of %d bytes (%s), not text.]", a.ID, m.Size, m.MIMEType)
		v.Metadata.HowToRead = "The body is binary: read it with resources/read of the id, or with read_resource {uri: id} in base64 windows."
		return v, nil
	}
	// The budget is what the value's JSON leaves of the limit with the
	// widest numbers and the longest how-to-read; each character costs
	// what it costs inside that JSON string.
	wide := int64(1<<62 - 1)
	probe := *v
	probe.Metadata.Truncated, probe.Metadata.NextOffset, probe.Metadata.HowToRead = true, &wide, notUTF8+howToFetchOn(a.ID, wide, wide)
	b, _ := json.Marshal(&probe)
	budget := int64(s.limits.MaxReadChars - utf8.RuneCount(b) - 16)
	if budget < 64 {
		return nil, Fail(KindTooLarge, fmt.Sprintf("the metadata of %s alone fills the %d-character result limit of this server", a.ID, s.limits.MaxReadChars))
	}
	win, err := textWindow(body, m.Size, 0, -1, budget, func(r rune) int64 { return textCost(r) - 1 })
	if err != nil {
		return nil, s.Unavailable(ctx, "store read", err)
	}
	v.Text = strings.ToValidUTF8(string(win.data), "\uFFFD")
	if end := int64(len(win.data)); end < m.Size {
		v.Metadata.Truncated, v.Metadata.NextOffset = true, &end
		v.Metadata.HowToRead = howToFetchOn(a.ID, end, m.Size)
	} else {
		v.Metadata.HowToRead = "text is the whole body."
	}
	if !utf8.Valid(win.data) {
		v.Metadata.HowToRead = notUTF8 + v.Metadata.HowToRead
	}
	return v, nil
}

// notUTF8 starts howToRead when the text is not what the body holds.
const notUTF8 = "The body is not valid UTF-8 (another charset, or not text): its invalid bytes show as U+FFFD in text; resources/read of the id gives the exact bytes. "

func howToFetchOn(id string, end, size int64) string {
	return fmt.Sprintf("text holds the first %d of %d bytes; read on with read_resource {\"uri\": %q, \"offset\": %d}, or grep_resource to find lines in the rest.", end, size, id, end)
}
