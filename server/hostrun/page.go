package hostrun

import (
	"bytes"
	"encoding/json"
	"errors"
	"html/template"
	"net/http"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/resourced/resourced/auth"
)

// sdkVersion is the go-sdk version the binary was built with, or "".
var sdkVersion = func() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, d := range bi.Deps {
		if d.Path == "github.com/modelcontextprotocol/go-sdk" {
			if d.Replace != nil {
				return d.Replace.Version
			}
			return d.Version
		}
	}
	return ""
}()

// Created is the answer to POST /fixtures/runs.
type Created struct {
	ID       string    `json:"id"`
	Endpoint string    `json:"endpoint"`
	Page     string    `json:"page"`
	JSON     string    `json:"json"`
	Markdown string    `json:"markdown"`
	Expires  time.Time `json:"expiresAt"`
}

// Paths below a run's page.
const (
	jsonSub     = "/report.json"
	markdownSub = "/sheet.md"
)

// setPrivate sets the headers of every run answer: never cached, never
// sent on as a Referer (the URL is the run's capability).
func setPrivate(h http.Header) {
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
}

// Create serves POST /fixtures/runs: a caller with resources:read starts a
// run of its tenant and gets its URLs.
func (r *Runs) Create() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		setPrivate(w.Header())
		if r == nil {
			http.NotFound(w, req)
			return
		}
		if req.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "Method Not Allowed: POST /fixtures/runs starts a host run", http.StatusMethodNotAllowed)
			return
		}
		p, ok := r.opts.Principal(w, req)
		if !ok {
			return
		}
		if !p.Has(auth.ScopeRead) {
			http.Error(w, "Forbidden: a host run needs the "+auth.ScopeRead+" scope (the fixture tools do)", http.StatusForbidden)
			return
		}
		run, err := r.create(p)
		var full *errFull
		if errors.As(err, &full) {
			w.Header().Set("Retry-After", strconv.Itoa(int(full.retryAfter.Seconds())+1))
			http.Error(w, "Too Many Requests: this server holds as many host runs as it keeps; retry when one expires", http.StatusTooManyRequests)
			return
		}
		base := r.opts.BaseURL + pagePrefix + run.id
		b, _ := json.Marshal(Created{ID: run.id, Endpoint: r.opts.BaseURL + runPathPrefix + run.id, Page: base,
			JSON: base + jsonSub, Markdown: base + markdownSub, Expires: run.expires.UTC()})
		r.opts.Logger.Info("host run created", "tenant", run.tenant) // never the id: it is the capability
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Location", base)
		w.WriteHeader(http.StatusCreated)
		w.Write(append(b, '\n'))
	})
}

// Pages serves a run's page (GET, and POST of its form), its JSON and its
// Markdown, for requests Route sent on.
func (r *Runs) Pages() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		setPrivate(w.Header())
		run := runFrom(req.Context())
		if r == nil || run == nil {
			notFound(w)
			return
		}
		sub := strings.TrimPrefix(req.URL.Path, pagePath)
		get := req.Method == http.MethodGet || req.Method == http.MethodHead
		switch {
		case sub == "" && get:
			var b bytes.Buffer
			if err := pageTemplate.Execute(&b, pageData{Report: r.report(run), ID: run.id}); err != nil {
				r.opts.Logger.Error("rendering a host run page", "err", err)
				http.Error(w, "Internal Server Error", http.StatusInternalServerError)
				return
			}
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
			w.Write(b.Bytes())
		case sub == "" && req.Method == http.MethodPost:
			if !r.submit(w, req, run) {
				return
			}
			w.Header().Set("Location", pagePrefix+run.id)
			w.WriteHeader(http.StatusSeeOther)
		case sub == jsonSub && get:
			b, _ := json.MarshalIndent(r.report(run), "", "  ")
			w.Header().Set("Content-Type", "application/json")
			w.Write(append(b, '\n'))
		case sub == markdownSub && get:
			var b bytes.Buffer
			r.report(run).WriteMarkdown(&b)
			w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
			w.Write(b.Bytes())
		case sub == "" || sub == jsonSub || sub == markdownSub:
			w.Header().Set("Allow", "GET, HEAD, POST")
			http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		default:
			notFound(w)
		}
	})
}

// submit takes the page's form: the markers the model wrote and the
// conditions only the user knows. It answers a bad form itself.
func (r *Runs) submit(w http.ResponseWriter, req *http.Request, run *Run) bool {
	req.Body = http.MaxBytesReader(w, req.Body, maxFormBytes)
	if err := req.ParseForm(); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			http.Error(w, "Request Entity Too Large: the form is limited to "+strconv.Itoa(maxFormBytes)+" bytes; paste only the model's answer", http.StatusRequestEntityTooLarge)
			return false
		}
		http.Error(w, "Bad Request: the form could not be read: "+clip(err.Error(), maxField), http.StatusBadRequest)
		return false
	}
	known, unknown := parseMarkers(req.PostForm.Get("markers"))
	now := r.opts.Now()
	run.mu.Lock()
	defer run.mu.Unlock()
	run.reported, run.unknown, run.submitted = known, unknown, now
	if run.reported == nil {
		run.reported = []string{}
	}
	for _, k := range userFields {
		if v, ok := req.PostForm[k]; ok {
			run.fields[k] = clip(strings.TrimSpace(v[0]), maxField)
		}
	}
	return true
}

type pageData struct {
	*Report
	ID string
}

// user reports whether key is typed by the user.
func (pageData) User(key string) bool { return slices.Contains(userFields, key) }

// Pasted is what the marker box shows after a submission.
func (d pageData) Pasted() string { return strings.Join(slices.Concat(d.Reported, d.Unknown), " ") }

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{
	"short": shortMarks,
	"time":  func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"lower": func(s string) string { return strings.ToLower(strings.ReplaceAll(s, " ", "-")) },
	"ttl": func(p *int64) string {
		if p == nil {
			return ""
		}
		return strconv.FormatInt(*p, 10)
	},
}).Parse(pageHTML))

// pageHTML is the page: plain HTML and inline CSS, no script, no external
// asset; the form posts back to the page.
const pageHTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Host acceptance sheet — resourced</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:1.2em auto;max-width:78em;padding:0 1em;color:#1b1b1b;background:#fff}
h1{font-size:1.5em;margin:.2em 0}h2{font-size:1.15em;margin:1.4em 0 .4em}
table{border-collapse:collapse;width:100%}th,td{border:1px solid #ccc;padding:.25em .45em;text-align:left;vertical-align:top}
th{background:#f1f1f1}code,.mono{font-family:ui-monospace,monospace;font-size:.95em}
td.result{font-weight:600;white-space:nowrap}
tr.pass td.result{background:#d8f5d8}tr.fail td.result{background:#f9d6d6}tr.not-run td.result{color:#777}
tr.awaiting-markers td.result{background:#fff3c4}tr.observed td.result{background:#dde8fa}
.src{color:#666;font-size:.9em}input[type=text]{width:100%;box-sizing:border-box}
textarea{width:100%;box-sizing:border-box;font-family:ui-monospace,monospace}
.note{color:#7a4b00}.muted{color:#666}button{font-size:1em;padding:.3em 1em}
</style>
</head>
<body>
<h1>Host acceptance sheet</h1>
<p class="muted">Run of tenant <b>{{.Tenant}}</b>, created {{time .Created}}, expires {{time .Expires}}.
Export: <a href="{{.ID}}/sheet.md">Markdown</a> · <a href="{{.ID}}/report.json">JSON</a>.
Keep this page's address to yourself: it is the run's key.</p>
<ol>
<li>Point the host at <code>{{.Endpoint}}</code> (Streamable HTTP, with a bearer token of tenant <b>{{.Tenant}}</b>): it serves what <code>/mcp</code> serves, and this page records what the host does there.</li>
<li>Ask the model to call every fixture tool (<code>search_*</code>, <code>probe_*</code>), to read every resource link, and to write down every <code>RSD-FIXTURE-</code> code it can see.</li>
<li>Paste the model's answer below and submit: each row is marked. Type the host and model in the run conditions. Reload to see new calls.</li>
</ol>
<form method="post">
<h2>Markers the model wrote</h2>
<textarea name="markers" aria-label="markers" rows="3" placeholder="Paste the model's answer: every RSD-FIXTURE- code it saw">{{.Pasted}}</textarea>
<p><button type="submit">Mark the rows</button>
{{if .Submitted}}<span class="muted">Last submitted {{time .Submitted}}: {{len .Reported}} known markers{{if .Unknown}}, unknown: <span class="mono">{{range .Unknown}}{{.}} {{end}}</span>{{end}}.</span>{{else}}<span class="muted">No markers submitted yet.</span>{{end}}</p>
<h2>Cases</h2>
<table id="rows">
<tr><th>id</th><th>kind</th><th>check</th><th>what the server saw</th><th>markers</th><th>model reported</th><th>not reported</th><th>result</th></tr>
{{range .Rows}}<tr id="row-{{.ID}}" class="{{lower .Result}}" data-result="{{.Result}}"><td><code>{{.ID}}</code></td><td>{{.Kind}}</td><td>{{.Check}}</td>
<td>{{.ServerSaw}}{{if .Note}}<br><span class="note">{{.Note}}</span>{{end}}</td><td class="mono">{{short .Markers}}</td><td class="mono">{{short .Reported}}</td><td class="mono">{{short .Missing}}</td><td class="result">{{.Result}}</td></tr>
{{end}}</table>
<h2>Run conditions</h2>
<table id="conditions">
<tr><th>condition</th><th>value</th><th>source</th></tr>
{{range .Conditions}}<tr id="cond-{{.Key}}"><td><code>{{.Key}}</code></td>
{{if $.User .Key}}<td><input type="text" name="{{.Key}}" value="{{.Value}}" maxlength="200" aria-label="{{.Key}}"></td><td class="src">you</td>
{{else}}<td>{{.Value}}</td><td class="src">{{if .Value}}server{{else}}not seen yet{{end}}</td>{{end}}</tr>
{{end}}</table>
<p><button type="submit">Save and mark the rows</button></p>
</form>
<h2>Resources read more than once</h2>
{{if .Rereads}}<table id="rereads"><tr><th>uri</th><th>cacheScope</th><th>ttlMs</th><th>reads</th><th>reads within ttlMs</th></tr>
{{range .Rereads}}<tr><td class="mono">{{.URI}}</td><td>{{.CacheScope}}</td><td>{{.TTLMs}}</td><td>{{.Reads}}</td><td>{{.WithinTTL}}</td></tr>
{{end}}</table>{{else}}<p class="muted">None yet.</p>{{end}}
<h2>Clients</h2>
{{if .Clients}}<ul>{{range .Clients}}<li>{{.}}</li>{{end}}</ul>{{else}}<p class="muted">None yet.</p>{{end}}
<h2>Requests ({{len .Events}}{{if .DroppedEvents}}, and {{.DroppedEvents}} more not listed{{end}})</h2>
<table id="events"><tr><th>time (UTC)</th><th>method</th><th>tool</th><th>uri</th><th>route</th><th>protocol</th><th>client</th><th>outcome</th><th>bytes</th><th>ttlMs</th><th>scope</th></tr>
{{range .Events}}<tr><td class="mono">{{time .At}}</td><td>{{.Method}}</td><td>{{.Tool}}</td><td class="mono">{{.URI}}</td><td>{{.Route}}</td><td>{{.ProtocolVersion}}</td><td>{{.Client}}</td><td>{{.Outcome}}</td><td>{{.Bytes}}</td><td>{{ttl .TTLMs}}</td><td>{{.CacheScope}}</td></tr>
{{end}}</table>
</body>
</html>
`
