package hostrun

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/resourced/resourced/server/fixtures"
)

// Results of a row.
const (
	ResultPass     = "PASS"
	ResultFail     = "FAIL"
	ResultNotRun   = "NOT RUN"
	ResultAwaiting = "AWAITING MARKERS"
	ResultObserved = "OBSERVED"
)

// Row kinds, as the seed's sheet names them.
const (
	KindNormative   = "normative"
	KindObservation = "observation"
)

// rowDef is one case of docs/fixtures.md.
type rowDef struct {
	id, kind, check string
	tools           []string // calling any of them runs the row
	reads           []string // fixture paths whose reads the row counts
	markers         []string // markers the row looks for in the model's answer
	missing         bool     // the not-found case
}

// RowNotFound is the id of the sheet's unknown-URI row.
const RowNotFound = "NOTFOUND"

// sheet is the acceptance sheet: the rows of docs/fixtures.md, then one
// observation row per probe, all from the fixtures' catalogue.
var sheet = func() []rowDef {
	cat := map[string]fixtures.Entry{}
	for _, e := range fixtures.Catalogue() {
		cat[e.Tool] = e
	}
	link := cat["search_link"]
	rows := []rowDef{
		{id: "T01", kind: KindNormative, check: "search_text: the text arrives", tools: []string{"search_text"}, markers: cat["search_text"].Markers},
		{id: "S01", kind: KindNormative, check: "search_structured: structuredContent arrives (text = its JSON)", tools: []string{"search_structured"}, markers: cat["search_structured"].Markers},
		{id: "E01", kind: KindNormative, check: "search_embedded: the embedded body arrives without resources/read", tools: []string{"search_embedded"}, markers: cat["search_embedded"].Markers},
		{id: "L01", kind: KindNormative, check: "search_link: the resource_link arrives, without its body", tools: []string{"search_link"}, markers: link.Markers},
		{id: "L02", kind: KindNormative, check: "the link's URI is read (it is not in resources/list) and its body arrives", tools: []string{"search_link"}, reads: []string{link.Path}, markers: link.Linked},
		{id: RowNotFound, kind: KindNormative, check: "resources/read of " + fixtures.Tenant + "/" + fixtures.MissingPath + " answers -32602", missing: true},
	}
	checks := map[string]string{
		"probe_structured_only": "structuredContent only, content []",
		"probe_link_listed":     "link to a listed resource: description, then the body if read",
		"probe_link_unlisted":   "link to an unlisted resource: description, then the body if read",
		"probe_audience":        "audience user (A01) and assistant (A02)",
		"probe_embedded_text":   "embedded text resource",
		"probe_embedded_blob":   "embedded text/plain blob (base64)",
		"probe_error":           "isError: text side (X01), structuredContent side (X02)",
		"probe_text_differs":    "text (D01) differs from structuredContent (D02)",
	}
	for _, e := range fixtures.Catalogue() {
		if strings.HasPrefix(e.Tool, "search_") {
			continue
		}
		check := checks[e.Tool]
		switch {
		case strings.HasPrefix(e.Tool, "probe_size_"):
			check = "large text: first line, last line (hosts spill near 50,000 characters)"
		case strings.HasPrefix(e.Tool, "probe_sc_"):
			check = "non-object structuredContent (2026-07-28); the text side"
		}
		d := rowDef{id: e.Tool, kind: KindObservation, check: check, tools: []string{e.Tool}, markers: slices.Concat(e.Markers, e.Linked)}
		if e.Linked != nil {
			d.reads = []string{e.Path}
		}
		rows = append(rows, d)
	}
	return rows
}()

// knownMarkers are all the markers of the sheet.
var knownMarkers = func() map[string]bool {
	m := map[string]bool{}
	for _, e := range fixtures.Catalogue() {
		for _, k := range slices.Concat(e.Markers, e.Linked) {
			m[k] = true
		}
	}
	return m
}()

var markerRE = regexp.MustCompile(regexp.QuoteMeta(fixtures.MarkerPrefix) + `[A-Z]+[0-9]+`)

// parseMarkers returns the known markers in text, sorted, and up to
// maxUnknown other RSD-FIXTURE- strings.
func parseMarkers(text string) (known, unknown []string) {
	for _, m := range markerRE.FindAllString(text, -1) {
		switch {
		case knownMarkers[m]:
			if !slices.Contains(known, m) {
				known = append(known, m)
			}
		case len(unknown) < maxUnknown && !slices.Contains(unknown, m):
			unknown = append(unknown, m)
		}
	}
	slices.Sort(known)
	return known, unknown
}

// Fields the user types on the page (the rest of the run conditions the
// server fills).
var userFields = []string{"host_product", "host_version", "model_and_settings", "model_visible_capture_method", "evidence_path_or_id"}

// conditionKeys are the run conditions of the seed's sheet, in its order.
var conditionKeys = []string{
	"server_name", "server_commit", "server_sdk_and_version", "host_product", "host_version",
	"client_sdk_and_version", "transport", "protocol_version_on_wire", "model_and_settings",
	"resource_read_route", "auth_context", "result_size_utf8_bytes", "model_visible_capture_method",
	"executed_at_utc", "evidence_path_or_id",
}

// Condition is one run condition.
type Condition struct {
	Key   string `json:"key"`
	Value string `json:"value"`
	// Source is "server" (seen by the server), "user" (typed on the page)
	// or "" (not known yet).
	Source string `json:"source"`
}

// Row is one row of the filled sheet.
type Row struct {
	ID    string   `json:"id"`
	Kind  string   `json:"kind"`
	Check string   `json:"check"`
	Tools []string `json:"tools,omitempty"`
	// Calls counts the calls of the row's tools, CallErrors those answered
	// with an error.
	Calls      int `json:"calls"`
	CallErrors int `json:"callErrors,omitempty"`
	// Reads counts reads of the row's linked resource by route.
	Reads map[string]int `json:"reads,omitempty"`
	// ServerSaw says in words what the server saw.
	ServerSaw string `json:"serverSaw"`
	// Markers are those the row looks for; Reported those of them pasted,
	// Missing the others (both empty until markers are submitted).
	Markers  []string `json:"markers,omitempty"`
	Reported []string `json:"reported,omitempty"`
	Missing  []string `json:"missing,omitempty"`
	Result   string   `json:"result"`
	Note     string   `json:"note,omitempty"`
}

// Reread is one URI read more than once through the run.
type Reread struct {
	URI        string `json:"uri"`
	CacheScope string `json:"cacheScope,omitempty"`
	TTLMs      int64  `json:"ttlMs"`
	Reads      int    `json:"reads"`
	// WithinTTL counts reads that came before the previous read's ttlMs
	// had passed: the host did not use what it had.
	WithinTTL int `json:"readsWithinTtl"`
}

// Report is a run as the page, the JSON and the terminal show it.
type Report struct {
	// Endpoint is the MCP URL to point the host at; Page the sheet's page.
	Endpoint   string      `json:"endpoint"`
	Page       string      `json:"page"`
	Tenant     string      `json:"tenant"`
	Created    time.Time   `json:"created"`
	Expires    time.Time   `json:"expires"`
	Conditions []Condition `json:"conditions"`
	Rows       []Row       `json:"rows"`
	// Submitted is when markers were last submitted (nil: never);
	// Reported the known markers, Unknown other RSD-FIXTURE- strings.
	Submitted *time.Time `json:"submitted,omitempty"`
	Reported  []string   `json:"reported"`
	Unknown   []string   `json:"unknown,omitempty"`
	Rereads   []Reread   `json:"rereads"`
	Clients   []string   `json:"clients"`
	Events    []Event    `json:"events"`
	// DroppedEvents counts events past Limits.Events (still scored).
	DroppedEvents int `json:"droppedEvents,omitempty"`
}

// report builds the Report of run.
func (r *Runs) report(run *Run) *Report {
	run.mu.Lock()
	defer run.mu.Unlock()
	rep := &Report{
		Endpoint: r.opts.BaseURL + runPathPrefix + run.id,
		Page:     r.opts.BaseURL + pagePrefix + run.id,
		Tenant:   run.tenant, Created: run.created.UTC(), Expires: run.expires.UTC(),
		Reported: slices.Clone(run.reported), Unknown: slices.Clone(run.unknown),
		Clients: slices.Clone(run.clients), Events: slices.Clone(run.events), DroppedEvents: run.dropped,
		Rereads: []Reread{},
	}
	if rep.Reported == nil {
		rep.Reported = []string{}
	}
	if rep.Clients == nil {
		rep.Clients = []string{}
	}
	if rep.Events == nil {
		rep.Events = []Event{}
	}
	if !run.submitted.IsZero() {
		t := run.submitted.UTC()
		rep.Submitted = &t
	}
	for _, u := range run.rereadOrder {
		rr := run.rereads[u]
		if rr.Reads > 1 {
			rep.Rereads = append(rep.Rereads, Reread{URI: rr.URI, CacheScope: rr.CacheScope, TTLMs: rr.TTLMs, Reads: rr.Reads, WithinTTL: rr.WithinTTL})
		}
	}
	rep.Conditions = r.conditions(run)
	for _, d := range sheet {
		rep.Rows = append(rep.Rows, run.row(d))
	}
	return rep
}

// conditions fills the run conditions; run.mu is held.
func (r *Runs) conditions(run *Run) []Condition {
	seen := map[string]string{
		"server_name":            "resourced",
		"server_commit":          r.opts.ServerVersion,
		"server_sdk_and_version": "",
		"transport":              "Streamable HTTP",
		"auth_context":           "tenant " + run.tenant + "; scopes " + strings.Join(run.scopes, " "),
	}
	if r.opts.SDKVersion != "" {
		seen["server_sdk_and_version"] = "github.com/modelcontextprotocol/go-sdk " + r.opts.SDKVersion
	}
	var clients []string
	for _, c := range run.clients {
		if !strings.HasPrefix(c, "User-Agent: ") {
			clients = append(clients, c)
		}
	}
	if len(clients) == 0 {
		clients = run.clients // only user agents: better than nothing
	}
	seen["client_sdk_and_version"] = strings.Join(clients, "; ")
	seen["protocol_version_on_wire"] = strings.Join(run.versions, ", ")
	var routes []string
	for _, byRoute := range run.reads {
		for route := range byRoute {
			if !slices.Contains(routes, route) {
				routes = append(routes, route)
			}
		}
	}
	for i, route := range routes {
		switch route {
		case RouteLink:
			routes[i] = "direct HTTPS (signed link)"
		case RouteRead:
		default:
			routes[i] = "dedicated tool (" + route + ")"
		}
	}
	slices.Sort(routes)
	seen["resource_read_route"] = strings.Join(routes, " + ")
	if len(routes) == 0 && run.linkToolsCalled() {
		seen["resource_read_route"] = "unsupported (links were returned; no read was seen)"
	}
	if run.maxResult > 0 {
		seen["result_size_utf8_bytes"] = strconv.FormatInt(run.maxResult, 10) + " (largest fixture result on the wire)"
	}
	if !run.firstEvent.IsZero() {
		seen["executed_at_utc"] = run.firstEvent.UTC().Format(time.RFC3339)
	}
	out := make([]Condition, 0, len(conditionKeys))
	for _, k := range conditionKeys {
		c := Condition{Key: k}
		if slices.Contains(userFields, k) {
			if v := run.fields[k]; v != "" {
				c.Value, c.Source = v, "user"
			}
		} else if v := seen[k]; v != "" {
			c.Value, c.Source = v, "server"
		}
		out = append(out, c)
	}
	return out
}

// linkToolsCalled reports whether a tool that returns a link was called;
// run.mu is held.
func (run *Run) linkToolsCalled() bool {
	for _, e := range fixtures.Catalogue() {
		if e.Linked != nil && run.calls[e.Tool] != nil {
			return true
		}
	}
	return false
}

// row scores one case; run.mu is held.
func (run *Run) row(d rowDef) Row {
	row := Row{ID: d.id, Kind: d.kind, Check: d.check, Tools: d.tools, Markers: d.markers}
	reads := run.observe(d, &row)
	submitted := !run.submitted.IsZero()
	if submitted {
		for _, m := range d.markers {
			if slices.Contains(run.reported, m) {
				row.Reported = append(row.Reported, m)
			} else {
				row.Missing = append(row.Missing, m)
			}
		}
	}
	ran := row.Calls > 0 || reads > 0 || (d.missing && run.missing.N > 0)
	row.Result = run.result(d, &row, reads, ran, submitted)
	row.Note = note(d, &row, reads, ran, submitted)
	return row
}

// observe fills in what the server saw of case d (calls, reads of its
// bodies, reads of the missing URI) and returns the good reads.
func (run *Run) observe(d rowDef, row *Row) int {
	var saw []string
	for _, t := range d.tools {
		if c := run.calls[t]; c != nil {
			row.Calls += c.N
			row.CallErrors += c.Errors
			s := fmt.Sprintf("%s called %d× (first %s)", t, c.N, c.First.UTC().Format(time.TimeOnly))
			if c.Errors > 0 {
				s += fmt.Sprintf(", %d failed", c.Errors)
			}
			saw = append(saw, s)
		} else {
			saw = append(saw, t+" not called")
		}
	}
	reads := 0
	for _, p := range d.reads {
		for route, t := range run.reads[p] {
			if row.Reads == nil {
				row.Reads = map[string]int{}
			}
			row.Reads[route] += t.N - t.Errors
			reads += t.N - t.Errors
		}
	}
	if d.reads != nil {
		if reads == 0 {
			saw = append(saw, "body not fetched")
		} else {
			var rs []string
			for route, n := range row.Reads {
				rs = append(rs, fmt.Sprintf("%s %d×", route, n))
			}
			slices.Sort(rs)
			saw = append(saw, "body fetched: "+strings.Join(rs, ", "))
		}
	}
	if d.missing {
		if run.missing.N == 0 {
			saw = append(saw, "not read")
		} else {
			saw = append(saw, fmt.Sprintf("read %d×, answered %s", run.missing.N, strings.Join(run.missingErrors, "; ")))
		}
	}
	row.ServerSaw = strings.Join(saw, "; ")
	return reads
}

// result is the result of case d: what the server saw, then the markers.
func (run *Run) result(d rowDef, row *Row, reads int, ran, submitted bool) string {
	var r string
	switch {
	case d.missing:
		r = ResultNotRun
		if run.missing.N > 0 {
			r = ResultFail
			for _, e := range run.missingErrors {
				if strings.HasSuffix(e, "error -32602") || strings.HasSuffix(e, "isError") {
					r = ResultPass
				}
			}
		}
	case !ran && len(row.Reported) == 0:
		r = ResultNotRun
	case row.Calls > 0 && row.CallErrors == row.Calls && reads == 0 && !slices.Contains(d.tools, "probe_error"):
		// Every call failed: whatever the model reported did not come
		// from this run's results.
		r = ResultFail
	case !submitted:
		r = ResultAwaiting
	case d.kind == KindObservation:
		r = ResultObserved
	case len(row.Missing) == 0:
		r = ResultPass
	default:
		r = ResultFail
	}
	return r
}

// note explains a result the server's view and the markers disagree on.
func note(d rowDef, row *Row, reads int, ran, submitted bool) string {
	inline := inlineMarkers(d)
	linkedReported := slices.ContainsFunc(row.Reported, func(m string) bool { return !slices.Contains(inline, m) })
	switch {
	case row.Result == ResultFail && row.Calls > 0 && row.CallErrors == row.Calls && reads == 0:
		return "every call of the tool failed (see the requests below): the host's requests were refused, so no marker can have come from this run"
	case d.reads != nil && reads == 0 && linkedReported:
		return "a body marker was reported but this run saw no read of its URI: the host read it elsewhere (another endpoint, a cache)"
	case d.reads != nil && reads > 0 && submitted && len(row.Missing) > 0:
		return "fetched, but the model did not report every marker: the host did not pass all of it on"
	case !ran && len(row.Reported) > 0:
		return "markers were reported although this run never saw the tool called: the host may have called it on another endpoint"
	}
	return ""
}

// inlineMarkers returns the markers of d that a tool result itself
// carries (not behind a link).
func inlineMarkers(d rowDef) []string {
	var out []string
	for _, t := range d.tools {
		out = append(out, fixtureTools[t].Markers...)
	}
	return out
}

// WriteText prints the report for a terminal.
//
// The report may come from any server (resourced check --host-run takes a
// URL), so what reaches the terminal is cleaned: every control character
// but the newline, and every bidirectional control, becomes U+FFFD.
func (rep *Report) WriteText(w io.Writer) error {
	var buf bytes.Buffer
	if err := rep.writeText(&buf); err != nil {
		return err
	}
	_, err := io.WriteString(w, strings.Map(func(r rune) rune {
		if r != '\n' && unsafeRune(r) {
			return '\uFFFD'
		}
		return r
	}, strings.ToValidUTF8(buf.String(), "\uFFFD")))
	return err
}

func (rep *Report) writeText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "host run of tenant %s, created %s, expires %s\n", rep.Tenant, rep.Created.Format(time.RFC3339), rep.Expires.Format(time.RFC3339))
	fmt.Fprintf(tw, "endpoint: %s\npage: %s\n\nrun conditions\n", rep.Endpoint, rep.Page)
	for _, c := range rep.Conditions {
		v := c.Value
		if v == "" {
			v = "(to be typed on the page)"
		}
		fmt.Fprintf(tw, "  %s:\t%s\n", c.Key, v)
	}
	fmt.Fprintf(tw, "\nid\tkind\tresult\tserver saw\treported\tmissing\n")
	for _, r := range rep.Rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Kind, r.Result, r.ServerSaw, shortMarks(r.Reported), shortMarks(r.Missing))
	}
	if len(rep.Rereads) > 0 {
		fmt.Fprintf(tw, "\nread more than once\tscope\tttlMs\treads\twithin ttlMs\n")
		for _, rr := range rep.Rereads {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\n", rr.URI, rr.CacheScope, rr.TTLMs, rr.Reads, rr.WithinTTL)
		}
	}
	if rep.Submitted == nil {
		fmt.Fprintf(tw, "\nno markers submitted yet: paste the model's RSD-FIXTURE- codes on the page\n")
	} else if len(rep.Unknown) > 0 {
		fmt.Fprintf(tw, "\nunknown markers in the paste: %s\n", strings.Join(rep.Unknown, " "))
	}
	fmt.Fprintf(tw, "\n%d events", len(rep.Events)+rep.DroppedEvents)
	if rep.DroppedEvents > 0 {
		fmt.Fprintf(tw, " (%d not listed)", rep.DroppedEvents)
	}
	fmt.Fprintln(tw)
	return tw.Flush()
}

// shortMarks writes markers without their prefix.
func shortMarks(ms []string) string {
	if len(ms) == 0 {
		return "-"
	}
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = strings.TrimPrefix(m, fixtures.MarkerPrefix)
	}
	return strings.Join(out, " ")
}

// mdCell escapes a value for a Markdown table cell or heading: every
// character that could open a link, an image, an autolink, raw HTML, code
// or emphasis, or end a cell, is backslash-escaped (CommonMark lets any
// ASCII punctuation be), the backslash itself first, so that no value a
// caller supplied (a host name, a client's User-Agent, a URI) renders as
// anything but its text. Line breaks become spaces.
func mdCell(s string) string {
	if s == "" {
		return " "
	}
	return mdEscaper.Replace(s)
}

var mdEscaper = func() *strings.Replacer {
	pairs := []string{"\n", " ", "\r", " "}
	for _, c := range "\\[]()!<>`|*_~" {
		pairs = append(pairs, string(c), "\\"+string(c))
	}
	return strings.NewReplacer(pairs...)
}()

// yamlString quotes s as the sheet's run conditions do ("…").
func yamlString(s string) string { return strconv.Quote(s) }

// WriteMarkdown exports the filled sheet in the seed's layout: the run
// conditions block, the test table, and the record of this host (one line
// per host, to be collected with other hosts' records). The run's URLs are
// left out: they are the run's capability.
func (rep *Report) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	cond := map[string]string{}
	for _, c := range rep.Conditions {
		cond[c.Key] = c.Value
	}
	host := strings.TrimSpace(cond["host_product"] + " " + cond["host_version"])
	if host == "" {
		host = "(host not named)"
	}
	fmt.Fprintf(&b, "# Acceptance sheet: %s\n\n", mdCell(host))
	b.WriteString("Filled by resourced from what the server saw in a host run, and from the markers the model reported.\n\n")
	b.WriteString("## Run conditions\n\n```yaml\n")
	for _, c := range rep.Conditions {
		fmt.Fprintf(&b, "%s: %s\n", c.Key, yamlString(c.Value))
	}
	b.WriteString("```\n\n## Tests\n\n")
	b.WriteString("| id | kind | check | server saw | model reported | missing | result | note |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	for _, r := range rep.Rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", mdCell(r.ID), mdCell(r.Kind), mdCell(r.Check), mdCell(r.ServerSaw),
			mdCell(shortMarks(r.Reported)), mdCell(shortMarks(r.Missing)), mdCell(r.Result), mdCell(r.Note))
	}
	if len(rep.Rereads) > 0 {
		b.WriteString("\n## Resources read more than once\n\n| uri | cacheScope | ttlMs | reads | within ttlMs |\n|---|---|---|---|---|\n")
		for _, rr := range rep.Rereads {
			fmt.Fprintf(&b, "| %s | %s | %d | %d | %d |\n", mdCell(rr.URI), mdCell(rr.CacheScope), rr.TTLMs, rr.Reads, rr.WithinTTL)
		}
	}
	b.WriteString("\n## Record per host\n\n| host_product | host_version | model_and_settings | protocol_version_on_wire | resource_read_route |")
	var cols []Row
	for _, r := range rep.Rows {
		if r.Kind == KindNormative {
			cols = append(cols, r)
			fmt.Fprintf(&b, " %s |", mdCell(r.ID))
		}
	}
	b.WriteString(" executed_at_utc |\n|" + strings.Repeat("---|", 6+len(cols)) + "\n")
	fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |", mdCell(cond["host_product"]), mdCell(cond["host_version"]), mdCell(cond["model_and_settings"]),
		mdCell(cond["protocol_version_on_wire"]), mdCell(cond["resource_read_route"]))
	for _, r := range cols {
		fmt.Fprintf(&b, " %s |", mdCell(r.Result))
	}
	fmt.Fprintf(&b, " %s |\n", mdCell(cond["executed_at_utc"]))
	_, err := io.WriteString(w, b.String())
	return err
}
