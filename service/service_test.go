package service

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/resourced/resourced/internal/jsonwire"
	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/store/memstore"
	"github.com/resourced/resourced/toolapi"
)

type env struct {
	svc     *Service
	st      store.Backend
	changed []string
	saved   int64
}

func newEnv(t *testing.T, quota store.Quota) *env {
	t.Helper()
	e := &env{st: memstore.New(memstore.Options{})}
	now := time.Now().UTC()
	svc, err := New(Options{
		Store: e.st, Quota: quota, Now: func() time.Time { return now },
		Schemes: []Scheme{
			{Name: "report", Kind: KindReport, Retention: time.Hour, MaxRetention: 24 * time.Hour, MaxBytes: 1 << 20},
			{Name: "search", Kind: KindSearch, Retention: time.Hour, MaxRetention: 24 * time.Hour, MaxBytes: 1 << 20},
		},
		OnChange: func(k store.Key) { e.changed = append(e.changed, k.String()) },
		OnSaved:  func(_ string, n int64) { e.saved += n },
	})
	if err != nil {
		t.Fatal(err)
	}
	e.svc = svc
	return e
}

const alice = "alice"

func text(s string) *string { return &s }

// TestPutBuildsTheObjectOnce: a save stores the size, the sha256 and the
// stored JSON form of its body (memstore keeps one), and runs both hooks.
func TestPutBuildsTheObjectOnce(t *testing.T) {
	e := newEnv(t, store.Quota{})
	r, f := e.svc.SaveReport(context.Background(), alice, &toolapi.ReportArgs{Path: "a/b", MIMEType: "text/plain", Text: text("hello")})
	if f != nil {
		t.Fatal(f)
	}
	if r.Meta.Size != 5 || r.Meta.SHA256 != store.Sum([]byte("hello")) || r.Value.Status != "created" || r.Value.Name != "a/b" {
		t.Fatalf("saved %+v", r.Value)
	}
	var encoded []byte
	err := e.st.View(context.Background(), r.Meta.Key, func(_ *store.Meta, enc, _ []byte) error {
		encoded = append([]byte{}, enc...)
		return nil
	})
	if err != nil || len(encoded) == 0 {
		t.Fatalf("no stored JSON form: %v", err)
	}
	if m, err := jsonwire.FormMember(encoded); err != nil || m == nil {
		t.Fatalf("stored form unusable: %v", err)
	}
	if len(e.changed) != 1 || e.changed[0] != "report://alice/a/b" || e.saved != 5 {
		t.Fatalf("hooks: changed %v, saved %d", e.changed, e.saved)
	}
}

// TestConflictSaysHowToRetryPerTransport: the one mapping of a failed
// precondition, worded for tools and for the HTTP API.
func TestConflictSaysHowToRetryPerTransport(t *testing.T) {
	e := newEnv(t, store.Quota{})
	ctx := context.Background()
	a := &toolapi.ReportArgs{Path: "x", MIMEType: "text/plain", Text: text("v1")}
	if _, f := e.svc.SaveReport(ctx, alice, a); f != nil {
		t.Fatal(f)
	}
	_, f := e.svc.SaveReport(ctx, alice, a)
	if f == nil || f.ErrorKind != KindConflict || !strings.Contains(f.Message, "overwrite: true") {
		t.Fatalf("tool conflict = %+v", f)
	}
	up, f := e.svc.PrepareUpload(alice, &UploadRequest{ReportArgs: toolapi.ReportArgs{SaveOptions: toolapi.SaveOptions{Scheme: "report"}, Path: "x", MIMEType: "text/plain"}, Cond: store.CreateOnly(), ContentLength: -1})
	if f != nil {
		t.Fatal(f)
	}
	_, _, err := e.svc.PutStream(ctx, Stream{Meta: up.Meta, Body: strings.NewReader("v2"), Cond: up.Cond, Retry: HTTPRetry})
	hf, ok := err.(*Failure)
	if !ok || hf.ErrorKind != KindConflict || !strings.Contains(hf.Message, "?overwrite=true") {
		t.Fatalf("upload conflict = %v", err)
	}
	if f := e.svc.Precheck(ctx, up); f == nil || f.Message != hf.Message {
		t.Fatalf("precheck = %+v, want the store's conflict %q", f, hf.Message)
	}
}

// TestQuotaFailureOnBothPaths: Put and PutStream refuse a save over the
// quota with the same quota_exceeded failure.
func TestQuotaFailureOnBothPaths(t *testing.T) {
	e := newEnv(t, store.Quota{Bytes: 4})
	ctx := context.Background()
	_, f := e.svc.SaveReport(ctx, alice, &toolapi.ReportArgs{Path: "big", MIMEType: "text/plain", Text: text("12345")})
	if f == nil || f.ErrorKind != KindQuota {
		t.Fatalf("Put over quota = %+v", f)
	}
	k := store.MustKey("alice", "report", "big")
	_, _, err := e.svc.PutStream(ctx, Stream{Meta: store.Meta{Key: k, MIMEType: "text/plain"}, Body: strings.NewReader("12345"), Retry: HTTPRetry})
	if sf, ok := err.(*Failure); !ok || sf.Message != f.Message {
		t.Fatalf("PutStream over quota = %v, want %q", err, f.Message)
	}
	if e.saved != 0 || len(e.changed) != 0 {
		t.Fatalf("refused saves ran the hooks: %d %v", e.saved, e.changed)
	}
}

// TestOwnWritesSkipQuotaAndHooks: the server's own writes (fixtures) take
// no tenant quota and notify no one.
func TestOwnWritesSkipQuotaAndHooks(t *testing.T) {
	e := newEnv(t, store.Quota{Bytes: 1})
	k := store.MustKey("fixtures", "report", "f")
	m, _, f := e.svc.Put(context.Background(), Write{Meta: store.Meta{Key: k, MIMEType: "text/plain"}, Body: []byte("fixture"), Own: true})
	if f != nil || m.Size != 7 {
		t.Fatalf("own write = %+v, %+v", m, f)
	}
	if e.saved != 0 || len(e.changed) != 0 {
		t.Fatalf("own write ran the hooks: %d %v", e.saved, e.changed)
	}
}

// TestStreamSourceErrorsPassThrough: an error the transport claims (its
// body failed) is returned as it is, not mapped to unavailable.
func TestStreamSourceErrorsPassThrough(t *testing.T) {
	e := newEnv(t, store.Quota{})
	k := store.MustKey("alice", "report", "s")
	boom := &readErr{}
	_, _, err := e.svc.PutStream(context.Background(), Stream{Meta: store.Meta{Key: k, MIMEType: "text/plain"}, Body: boom,
		Source: func(err error) bool { return boom.failed }})
	if _, isFailure := err.(*Failure); err == nil || isFailure {
		t.Fatalf("PutStream with a failing body = %v, want the body's error", err)
	}
}

type readErr struct{ failed bool }

func (r *readErr) Read([]byte) (int, error) { r.failed = true; return 0, errBodyFailed }

var errBodyFailed = errors.New("the body failed")

// unknownOutcome is a backend whose writes end with store.ErrUnknownOutcome.
type unknownOutcome struct{ store.Backend }

func (unknownOutcome) Put(context.Context, *store.Object, store.Cond) (store.Meta, bool, error) {
	return store.Meta{}, false, store.ErrUnknownOutcome
}

// TestUnknownOutcomeIsNotNothingChanged: a write whose outcome the backend
// cannot tell (a retried S3 request whose first attempt may have landed) is
// unavailable and retry-safe, but never claims that nothing was changed.
func TestUnknownOutcomeIsNotNothingChanged(t *testing.T) {
	e := newEnv(t, store.Quota{})
	svc, err := New(Options{Store: unknownOutcome{e.st}, Schemes: []Scheme{{Name: "report", Kind: KindReport, Retention: time.Hour, MaxRetention: time.Hour, MaxBytes: 1 << 20}}})
	if err != nil {
		t.Fatal(err)
	}
	_, f := svc.SaveReport(context.Background(), alice, &toolapi.ReportArgs{Path: "a/b", MIMEType: "text/plain", Text: text("x")})
	if f == nil || f.ErrorKind != KindUnavailable || !f.RetrySafe || strings.Contains(f.Message, "nothing was changed") || !strings.Contains(f.Message, "could not confirm") {
		t.Errorf("unknown outcome = %+v", f)
	}
}

// TestSaveTakesBytes: Save stores the bytes it is given (no text or
// base64 form to decode), checks what the object depends on, and
// DeleteKey removes what it saved.
func TestSaveTakesBytes(t *testing.T) {
	e := newEnv(t, store.Quota{})
	ctx := context.Background()
	body := []byte{0, 0xff, 'x'}
	r, f := e.svc.Save(ctx, alice, SaveRequest{Path: "gw/part/0", MIMEType: "application/octet-stream", Body: body, Cond: store.CreateOnly()})
	if f != nil {
		t.Fatal(f)
	}
	obj, err := e.st.Get(ctx, r.Meta.Key)
	if err != nil || string(obj.Body) != string(body) || obj.Visibility != store.Private || obj.Expires.IsZero() {
		t.Fatalf("stored %+v %v", obj, err)
	}
	if _, f := e.svc.Save(ctx, alice, SaveRequest{Path: "gw/part/0", MIMEType: "application/octet-stream", Body: body, Cond: store.CreateOnly()}); f == nil || f.ErrorKind != KindConflict {
		t.Fatalf("second create-only save: %v", f)
	}
	for _, bad := range []SaveRequest{
		{Path: "a//b", MIMEType: "text/plain", Body: body},
		{Path: "a", MIMEType: "not a type", Body: body},
		{Path: "a", MIMEType: "text/plain", Body: body, Scheme: "search"},
		{Path: "a", MIMEType: "text/plain", Body: make([]byte, 2<<20)},
	} {
		if _, f := e.svc.Save(ctx, alice, bad); f == nil {
			t.Errorf("Save(%q, %q, scheme %q, %d bytes) = nil failure", bad.Path, bad.MIMEType, bad.Scheme, len(bad.Body))
		}
	}
	if f := e.svc.DeleteKey(ctx, r.Meta.Key); f != nil {
		t.Fatal(f)
	}
	if f := e.svc.DeleteKey(ctx, r.Meta.Key); f == nil || f.ErrorKind != KindNotFound {
		t.Fatalf("second DeleteKey: %v", f)
	}
}

// TestSnapshotHitURLIsALink: a hit's url is shown by hosts as a link, so
// a snapshot takes only absolute http(s) URLs; any other url is a
// validation failure naming hits[i].url, and nothing is stored.
func TestSnapshotHitURLIsALink(t *testing.T) {
	e := newEnv(t, store.Quota{})
	ctx := context.Background()
	save := func(u string) (*Result, *Failure) {
		return e.svc.SaveSnapshot(ctx, alice, &toolapi.SearchSnapshotArgs{Query: "q", Hits: []toolapi.Hit{
			{ID: "ok", URL: text("https://example.com/")}, {ID: "x", URL: &u},
		}})
	}
	for _, u := range []string{
		"https://example.com/doc/1?q=a%20b#top", "http://example.com", "HTTPS://Example.COM:8443/a", "http://[::1]:8080/x",
		"https://bücher.example/straße", "https://example.com/a\\b", "https://example.com:65535/", "http://example.com:/",
	} {
		if _, f := save(u); f != nil {
			t.Errorf("url %q refused: %v", u, f)
		}
	}
	stored := func() int {
		page, err := e.st.List(ctx, store.ListQuery{Tenant: alice, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		return len(page.Items)
	}
	before := stored()
	if before != 8 {
		t.Fatalf("%d snapshots stored, want 8", before)
	}
	for u, why := range map[string]string{
		"javascript:alert(1)":                         `scheme "javascript"`,
		"JavaScript:alert(1)":                         `scheme "javascript"`, // url.Parse lowers the scheme
		"data:text/html,<script>alert(1)</script>":    `scheme "data"`,
		"vbscript:msgbox(1)":                          `scheme "vbscript"`,
		"file:///etc/passwd":                          `scheme "file"`,
		"ftp://example.com/a":                         `scheme "ftp"`,
		"/relative/path":                              "relative reference",
		"//example.com/x":                             "relative reference",
		"example.com":                                 "relative reference",
		"":                                            "is empty",
		"https:example.com":                           "no host",
		"https:///path":                               "no host",
		"http://:80/":                                 "no host",
		"https://user:pw@example.com/":                "user name or password",
		"https://example.com@evil.example/":           "user name or password",
		" https://example.com/":                       "whitespace",
		"java\tscript:alert(1)":                       "whitespace",
		"https://example.com/\u202egnp.exe":           "bidirectional",
		"https://example.com/\x00":                    "control",
		"https://example.com/" + string([]byte{0xff}): "UTF-8",
		"https://exa mple.com/":                       "whitespace",
		"https://example.com:port/":                   "not a URL",
		"https://example.com:99999/":                  "not a TCP port",
		"https://example.com:65536/":                  "not a TCP port",
		"http://example.com:0/":                       "not a TCP port",
		"http://[::1]:" + strings.Repeat("9", 4000):   "not a TCP port",
		"https://example.com/" + strings.Repeat("a", MaxLinkURLLen): "limit is 8192",
	} {
		_, f := save(u)
		if f == nil {
			t.Errorf("url %q accepted", u)
			continue
		}
		if f.ErrorKind != KindValidation || len(f.FieldErrors) != 1 || f.FieldErrors[0].Field != "hits[1].url" || !strings.Contains(f.Message, why) {
			t.Errorf("url %q: failure %+v, want a validation_error of hits[1].url saying %q", u, f, why)
		}
	}
	if n := stored(); n != before {
		t.Errorf("refused snapshots stored: %d objects, want %d", n, before)
	}
}
