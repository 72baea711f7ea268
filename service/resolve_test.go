package service

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/toolapi"
)

// uriCatalogue is the catalogue of URIs every read route must answer in
// one class: "" readable, or the failure kind. alice owns
// report://alice/ok (private) and report://alice/pub (public); bob reads.
var uriCatalogue = []struct {
	uri, alice, bob string
}{
	{"report://alice/ok", "", KindNotFound},
	{"report://alice/pub", "", ""},
	{"report://alice/none", KindNotFound, KindNotFound},
	{"search://alice/ok", KindNotFound, KindNotFound},
	{"REPORT://alice/ok", KindValidation, KindValidation},   // upper-case scheme
	{"Report://alice/ok", KindValidation, KindValidation},   // mixed case
	{"report://Alice/ok", KindValidation, KindValidation},   // tenant case
	{"report:alice/ok", KindValidation, KindValidation},     // missing "://"
	{"report:/alice/ok", KindValidation, KindValidation},    // missing "://"
	{"REPORT:alice/ok", KindValidation, KindValidation},     // both
	{"report://alice/ok/", KindValidation, KindValidation},  // trailing slash
	{"report://alice//ok", KindValidation, KindValidation},  // empty segment
	{"report://alice/./ok", KindValidation, KindValidation}, // dot segment
	{"report://alice/%6Fk", KindValidation, KindValidation}, // percent-escape
	{"report://alice/ok?x", KindValidation, KindValidation}, // query
	{"report://alice/ok#x", KindValidation, KindValidation}, // fragment
	{"report://a@alice/ok", KindValidation, KindValidation}, // userinfo
	{"report://alice:1/ok", KindValidation, KindValidation}, // port
	{"report://alice", KindValidation, KindValidation},      // no path
	{"report:///ok", KindValidation, KindValidation},        // no tenant
	{"report://" + strings.Repeat("a", 64) + "/x", KindValidation, KindValidation},
	{"report://alice/" + strings.Repeat("x", 1100), KindValidation, KindValidation}, // too long
	{"report://bob/ok", KindNotFound, KindNotFound},                                 // another tenant, nothing there
	{"file:///etc/passwd", KindNotFound, KindNotFound},                              // unconfigured scheme
	{"http://alice/ok", KindNotFound, KindNotFound},                                 // unconfigured scheme
	{"reports://alice/ok", KindNotFound, KindNotFound},                              // unconfigured scheme
	{"\u212Aeport://alice/ok", KindNotFound, KindNotFound},                          // a look-alike never folds
	{"report", KindNotFound, KindNotFound},                                          // no ':' at all: no scheme
	{"", KindValidation, KindValidation},
}

// TestResolveOneClassEverywhere: Stat, Open, View and the read and search
// tools answer each URI of the catalogue in one class, for the owner and
// for another tenant, and a refusal of the same URI is the same failure
// on every route.
func TestResolveOneClassEverywhere(t *testing.T) {
	e := newEnv(t, store.Quota{})
	ctx := context.Background()
	for _, r := range []struct {
		path string
		vis  string
	}{{"ok", ""}, {"pub", "public"}} {
		body := `{"a":1}`
		if _, f := e.svc.SaveReport(ctx, alice, &toolapi.ReportArgs{Path: r.path, MIMEType: "application/json", Text: &body, SaveOptions: toolapi.SaveOptions{Visibility: r.vis}}); f != nil {
			t.Fatal(f)
		}
	}
	routes := map[string]func(tenant, raw string) *Failure{
		"resolve": func(_, raw string) *Failure { _, f := e.svc.Resolve(raw); return f },
		"stat":    func(tenant, raw string) *Failure { _, f := e.svc.Stat(ctx, tenant, raw); return f },
		"open": func(tenant, raw string) *Failure {
			_, rc, f := e.svc.Open(ctx, tenant, raw)
			if f == nil {
				rc.Close()
			}
			return f
		},
		"view": func(tenant, raw string) *Failure {
			return e.svc.View(ctx, tenant, raw, func(*store.Meta, []byte, []byte) error { return nil })
		},
		"stat_resource": func(tenant, raw string) *Failure {
			_, f := e.svc.StatResource(ctx, tenant, &toolapi.StatArgs{URI: raw})
			return f
		},
		"grep_resource": func(tenant, raw string) *Failure {
			_, f := e.svc.Grep(ctx, tenant, &toolapi.GrepArgs{URI: raw, Pattern: "a"})
			return f
		},
		"query_resource": func(tenant, raw string) *Failure {
			_, f := e.svc.Query(ctx, tenant, &toolapi.QueryArgs{URI: raw, Path: "$.a"})
			return f
		},
	}
	for _, c := range uriCatalogue {
		for tenant, want := range map[string]string{"alice": c.alice, "bob": c.bob} {
			var first *Failure
			for name, route := range routes {
				f := route(tenant, c.uri)
				if name == "resolve" {
					// Resolve knows no tenant: it answers only the grammar.
					if c.alice == KindValidation && (f == nil || f.ErrorKind != KindValidation) {
						t.Errorf("Resolve(%q) = %v, want validation", c.uri, f)
					}
					continue
				}
				got := ""
				if f != nil {
					got = f.ErrorKind
				}
				if got != want {
					t.Errorf("%s as %s of %q: %q (%v), want %q", name, tenant, c.uri, got, f, want)
					continue
				}
				if f == nil {
					continue
				}
				if first == nil {
					first = f
				} else if f.Message != first.Message || len(f.FieldErrors) != len(first.FieldErrors) {
					t.Errorf("%s as %s of %q: %q, another route said %q", name, tenant, c.uri, f.Message, first.Message)
				}
			}
		}
	}
}

// TestResolveRefusesBeforeStorage: no URI refused by the grammar or the
// scheme reaches the store, and an unreadable object's body is never
// handed to the caller's function.
func TestResolveRefusesBeforeStorage(t *testing.T) {
	e := newEnv(t, store.Quota{})
	ctx := context.Background()
	body := "secret"
	if _, f := e.svc.SaveReport(ctx, alice, &toolapi.ReportArgs{Path: "ok", MIMEType: "text/plain", Text: &body}); f != nil {
		t.Fatal(f)
	}
	called := false
	f := e.svc.View(ctx, "bob", "report://alice/ok", func(*store.Meta, []byte, []byte) error { called = true; return nil })
	if f == nil || f.ErrorKind != KindNotFound || called {
		t.Fatalf("bob's view of alice's private: %v, fn called %v", f, called)
	}
	m, rc, f := e.svc.Open(ctx, "alice", "report://alice/ok")
	if f != nil {
		t.Fatal(f)
	}
	defer rc.Close()
	got, _ := io.ReadAll(rc)
	if string(got) != body || m.Key.Tenant() != "alice" {
		t.Fatalf("open: %q %v", got, m.Key)
	}
}

// TestListResourcesPhases: own listed resources first, then other
// tenants' public listed ones; a scheme no longer configured is skipped;
// a cursor of another tenant is refused.
func TestListResourcesPhases(t *testing.T) {
	e := newEnv(t, store.Quota{})
	ctx := context.Background()
	save := func(tenant, path, vis string) {
		t.Helper()
		b := "x"
		if _, f := e.svc.SaveReport(ctx, tenant, &toolapi.ReportArgs{Path: path, MIMEType: "text/plain", Text: &b, SaveOptions: toolapi.SaveOptions{Listed: true, Visibility: vis}}); f != nil {
			t.Fatal(f)
		}
	}
	save("alice", "a1", "")
	save("alice", "a2", "")
	save("bob", "b1", "public")
	save("bob", "b2", "")
	// An object of a scheme the service does not serve (still stored).
	if _, _, err := e.st.Put(ctx, &store.Object{Meta: store.Meta{Key: store.MustKey("alice", "old", "x"), MIMEType: "text/plain", Listed: true}, Body: []byte("x")}, store.Cond{}); err != nil {
		t.Fatal(err)
	}
	var got []string
	cursor := ""
	for range 10 {
		page, f := e.svc.ListResources(ctx, "alice", cursor, 1)
		if f != nil {
			t.Fatal(f)
		}
		for _, m := range page.Items {
			got = append(got, m.Key.String())
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	want := "report://alice/a1 report://alice/a2 report://bob/b1"
	if strings.Join(got, " ") != want {
		t.Fatalf("listed %v, want %s", got, want)
	}
	page, f := e.svc.ListResources(ctx, "alice", "", 1)
	if f != nil || page.NextCursor == "" {
		t.Fatal(f)
	}
	if _, f := e.svc.ListResources(ctx, "bob", page.NextCursor, 1); f == nil || f.ErrorKind != KindValidation {
		t.Fatalf("bob with alice's cursor: %v", f)
	}
}
