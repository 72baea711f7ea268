// Package checker is the client behind `resourced check`: it connects to
// any MCP server over Streamable HTTP, speaking raw JSON-RPC so that it sees
// every response byte for byte, and reports a table of rows, each PASS, FAIL
// or SKIP with a short piece of evidence.
//
// Rows come in three layers, each run only where it applies:
//
//   - universal (U..): any MCP server at all. The handshake, the list
//     methods, unknown resource URIs and tools, and every response checked
//     against the official JSON Schema of the negotiated protocol version
//     (package mcpschema), tools' outputSchemas and the structuredContent
//     the server returns.
//   - store contract (C..): servers exposing the tools of resourced's
//     CONTRACT §4 (save_report, save_search_snapshot, stat_resource,
//     list_resources, delete_resource). Round trips under a unique path per
//     run, removed again at the end.
//   - acceptance (T01, S01, E01, L01, L02, A..): servers exposing the fixture
//     tools of docs/fixtures.md, the rows of the acceptance sheet.
//
// Each row has a kind, as on the acceptance sheet: normative (a MUST of the
// MCP specification of the negotiated version), additional (a SHOULD of the
// specification, or a condition resourced's contract or the acceptance sheet
// adds) and observed (what the server does where nothing is required;
// recorded, never a failure of the run). A FAIL of a normative row makes
// the run fail. The catalogue with every row's basis is [Catalogue].
package checker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/resourced/resourced/mcpschema"
)

// Kind says what a row's requirement rests on.
type Kind string

// The kinds of rows.
const (
	// Normative rows check a MUST of the MCP specification of the
	// negotiated protocol version.
	Normative Kind = "normative"
	// Additional rows check a SHOULD of the specification or a condition
	// of resourced's contract or the acceptance sheet.
	Additional Kind = "additional"
	// Observed rows record behaviour nothing requires; they never fail a
	// run.
	Observed Kind = "observed"
)

// Status is the outcome of a row.
type Status string

// The statuses of a row.
const (
	Pass Status = "PASS"
	Fail Status = "FAIL"
	Skip Status = "SKIP"
)

// Layers of rows.
const (
	LayerUniversal  = "universal"
	LayerStore      = "store"
	LayerAcceptance = "acceptance"
)

// Protocol version choices for [Options.Protocol].
const (
	ProtocolAuto = "auto"
	V2026        = mcpschema.V2026_07_28
	V2025        = mcpschema.V2025_11_25
)

// Row is one line of the report.
type Row struct {
	ID       string `json:"id"`
	Layer    string `json:"layer"`
	Kind     Kind   `json:"kind"`
	Status   Status `json:"status"`
	Check    string `json:"check"`
	Evidence string `json:"evidence"`
	// Basis names where the requirement comes from.
	Basis string `json:"basis"`
}

// Options configure a run.
type Options struct {
	// URL is the MCP endpoint, e.g. http://127.0.0.1:8765/mcp.
	URL string
	// Header is sent with every request (e.g. Authorization). Its values
	// never appear in the report.
	Header http.Header
	// Protocol is "2026-07-28", "2025-11-25" or "auto" (the default):
	// 2026-07-28 when the server's server/discover offers it, else
	// 2025-11-25.
	Protocol string
	// HTTPClient sends the requests; nil means a client with Timeout.
	HTTPClient *http.Client
	// Timeout bounds each request; 0 means 30 s.
	Timeout time.Duration
	// ClientName is sent as clientInfo.name; "" means "resourced-check".
	ClientName string
	// Version is sent as clientInfo.version; "" means "dev".
	Version string
}

// Server describes the server that was checked.
type Server struct {
	Name         string         `json:"name,omitempty"`
	Version      string         `json:"version,omitempty"`
	Capabilities map[string]any `json:"capabilities,omitempty"`
	Tools        []string       `json:"tools,omitempty"`
}

// Summary counts rows.
type Summary struct {
	Rows            int `json:"rows"`
	Pass            int `json:"pass"`
	Fail            int `json:"fail"`
	Skip            int `json:"skip"`
	NormativeFail   int `json:"normativeFail"`
	AdditionalFail  int `json:"additionalFail"`
	ObservedFail    int `json:"observedFail"`
	NormativeTotal  int `json:"normative"`
	AdditionalTotal int `json:"additional"`
}

// Report is the outcome of a run.
type Report struct {
	URL        string    `json:"url"`
	Protocol   string    `json:"protocol"`
	Server     Server    `json:"server"`
	StartedAt  time.Time `json:"startedAt"`
	DurationMs int64     `json:"durationMs"`
	Rows       []Row     `json:"rows"`
	Summary    Summary   `json:"summary"`
	// Layers says for each layer whether it applied, and why not.
	Layers map[string]string `json:"layers"`
}

// Failed reports whether a normative row failed.
func (r *Report) Failed() bool { return r.Summary.NormativeFail > 0 }

// Row returns the row with id, or nil.
func (r *Report) Row(id string) *Row {
	for i := range r.Rows {
		if r.Rows[i].ID == id {
			return &r.Rows[i]
		}
	}
	return nil
}

// ErrUsage marks errors in the options.
var ErrUsage = errors.New("usage")

// ErrConnection marks a run that could not talk to the server at all: no
// connection, no JSON-RPC answer, or a failed handshake. Row failures are
// not errors; they are in the report.
var ErrConnection = errors.New("connection")

// Run checks the server at opts.URL and returns the report. The error is
// non-nil only when the check could not run (wrapping [ErrUsage] or
// [ErrConnection]); failed checks are rows of the report.
func Run(ctx context.Context, opts Options) (*Report, error) {
	u, err := url.Parse(opts.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: --url must be an http(s) URL of an MCP endpoint, got %q", ErrUsage, redactURL(opts.URL))
	}
	switch opts.Protocol {
	case "", ProtocolAuto, V2026, V2025:
	default:
		return nil, fmt.Errorf("%w: --protocol must be %s, %s or %s, got %q", ErrUsage, V2026, V2025, ProtocolAuto, opts.Protocol)
	}
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: timeout}
	}
	name, version := opts.ClientName, opts.Version
	if name == "" {
		name = "resourced-check"
	}
	if version == "" {
		version = "dev"
	}
	r := &run{
		c: &client{
			url:    opts.URL,
			header: opts.Header.Clone(),
			hc:     hc,
			info:   map[string]any{"name": name, "version": version},
		},
		rows:    map[string]*Row{},
		token:   randomToken(),
		secrets: secretsOf(opts.Header),
		report: &Report{
			URL:       redactURL(opts.URL),
			StartedAt: time.Now().UTC(),
			Layers:    map[string]string{},
		},
	}
	defer r.c.close(context.WithoutCancel(ctx))
	if err := r.handshake(ctx, opts.Protocol); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrConnection, r.redact(err.Error()))
	}
	r.report.Protocol = r.c.version
	for _, d := range catalogue {
		kind := d.kind
		if r.c.version == V2025 && d.kind2025 != "" {
			kind = d.kind2025
		}
		r.rows[d.id] = &Row{ID: d.id, Layer: d.layer, Kind: kind, Check: d.check, Basis: d.basis}
	}
	r.setHandshakeRow()
	r.guard(LayerUniversal, func() { r.universal(ctx) })
	r.guard(LayerStore, func() { r.storeContract(ctx) })
	r.guard(LayerAcceptance, func() { r.acceptance(ctx) })
	r.guard(LayerUniversal, r.aggregate)
	r.finish()
	return r.report, nil
}

// guard runs f; a panic, which is a bug of the checker and not of the
// server, skips the rest of the layer with the panic as the reason.
func (r *run) guard(layer string, f func()) {
	defer func() {
		if v := recover(); v != nil {
			r.skipLayer(layer, fmt.Sprintf("internal error of the checker, please report it: %v", v))
		}
	}()
	f()
}

// run is the state of one check.
type run struct {
	c       *client
	rows    map[string]*Row
	report  *Report
	token   string   // random, unique to this run: paths, unknown URIs
	secrets []string // header values, redacted from every piece of evidence

	handshakeEvidence string
	handshakeProblems []string
	caps              map[string]any
	tools             map[string]*toolInfo
	toolOrder         []string
	calls             []*toolCall
}

func randomToken() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// secretsOf returns the header values worth redacting: each whole value,
// and for "Scheme credentials" forms the credentials alone.
func secretsOf(h http.Header) []string {
	var out []string
	for _, vs := range h {
		for _, v := range vs {
			if len(v) >= 4 {
				out = append(out, v)
			}
			if _, cred, ok := strings.Cut(v, " "); ok && len(strings.TrimSpace(cred)) >= 4 {
				out = append(out, strings.TrimSpace(cred))
			}
		}
	}
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

func (r *run) redact(s string) string {
	for _, v := range r.secrets {
		s = strings.ReplaceAll(s, v, "[redacted]")
	}
	return s
}

// redactURL drops userinfo, query and fragment, where credentials hide.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparseable URL)"
	}
	u.User = nil
	if u.RawQuery != "" {
		u.RawQuery = "[redacted]"
	}
	u.Fragment = ""
	return u.String()
}

func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// pass marks a row PASS unless it already failed.
func (r *run) pass(id, format string, args ...any) {
	row := r.row(id)
	if row.Status == Fail {
		return
	}
	row.Status = Pass
	row.Evidence = fmt.Sprintf(format, args...)
}

// fail marks a row FAIL; the first failure's evidence is kept, later ones
// are counted.
func (r *run) fail(id, format string, args ...any) {
	row := r.row(id)
	msg := fmt.Sprintf(format, args...)
	if row.Status == Fail {
		if !strings.Contains(row.Evidence, "(and more)") {
			row.Evidence += " (and more)"
		}
		return
	}
	row.Status = Fail
	row.Evidence = msg
}

// skip marks a row SKIP unless it already has a status.
func (r *run) skip(id, format string, args ...any) {
	row := r.row(id)
	if row.Status != "" {
		return
	}
	row.Status = Skip
	row.Evidence = fmt.Sprintf(format, args...)
}

// check records cond as PASS (evidence) or FAIL (problem).
func (r *run) check(id string, ok bool, evidence, problem string) {
	if ok {
		r.pass(id, "%s", evidence)
	} else {
		r.fail(id, "%s", problem)
	}
}

func (r *run) row(id string) *Row {
	row, ok := r.rows[id]
	if !ok {
		panic("checker: no row " + id)
	}
	return row
}

// skipLayer skips every row of layer that has no status yet.
func (r *run) skipLayer(layer, why string) {
	r.report.Layers[layer] = "skipped: " + why
	for _, d := range catalogue {
		if d.layer == layer {
			r.skip(d.id, "%s", why)
		}
	}
}

// maxEvidence bounds the evidence of one row.
const maxEvidence = 300

func (r *run) finish() {
	rep := r.report
	rep.DurationMs = time.Since(rep.StartedAt).Milliseconds()
	for _, d := range catalogue {
		row := r.rows[d.id]
		if row.Status == "" {
			row.Status = Skip
			row.Evidence = "not run"
		}
		row.Evidence = clip(oneLine(r.redact(row.Evidence)), maxEvidence)
		rep.Rows = append(rep.Rows, *row)
		s := &rep.Summary
		s.Rows++
		switch row.Kind {
		case Normative:
			s.NormativeTotal++
		case Additional:
			s.AdditionalTotal++
		}
		switch row.Status {
		case Pass:
			s.Pass++
		case Skip:
			s.Skip++
		case Fail:
			s.Fail++
			switch row.Kind {
			case Normative:
				s.NormativeFail++
			case Additional:
				s.AdditionalFail++
			case Observed:
				s.ObservedFail++
			}
		}
	}
	for _, l := range []string{LayerUniversal, LayerStore, LayerAcceptance} {
		if _, ok := rep.Layers[l]; !ok {
			rep.Layers[l] = "applied"
		}
	}
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8Start(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
