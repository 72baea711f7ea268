package service

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/theory/jsonpath"
	"github.com/theory/jsonpath/spec"

	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/toolapi"
)

// paths is the normalized paths of nodes, sorted.
func paths(nodes []*spec.LocatedNode) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.Path.String()
	}
	slices.Sort(out)
	return out
}

// TestEvaluateQueryAgreesWithJSONPath: the bounded evaluator selects what
// the jsonpath package selects, for every kind of segment, selector,
// filter, comparison and function.
func TestEvaluateQueryAgreesWithJSONPath(t *testing.T) {
	docs := []string{
		`{"store":{"book":[{"category":"reference","author":"Nigel Rees","title":"Sayings of the Century","price":8.95},
		  {"category":"fiction","author":"Evelyn Waugh","title":"Sword of Honour","price":12.99},
		  {"category":"fiction","author":"Herman Melville","title":"Moby Dick","isbn":"0-553-21311-3","price":8.99},
		  {"category":"fiction","author":"J. R. R. Tolkien","title":"The Lord of the Rings","isbn":"0-395-19395-8","price":22.99}],
		  "bicycle":{"color":"red","price":399}},"wanted":[1,{"a":"b"}],"copy":[1,{"a":"b"}],"e":[],"n":null,"k\u0001\"q":"odd key"}`,
		`[{"k":0},{"k":1,"a":[1,2,3]},{"k":"x","a":{"b":{"c":"ab\nc"}}},3,"s",null,true,[[],[[1]]],{"a b":1,"\u00e9":2}]`,
	}
	queries := []string{
		`$`, `$.store.book[0].title`, `$..author`, `$.store.*`, `$..*`, `$..book[2]`, `$..book[-1]`, `$..book[0,1]`,
		`$..book[:2]`, `$..book[::-1]`, `$..book[1:3:2]`, `$..book[?@.isbn]`, `$..book[?!@.isbn]`, `$..book[?@.price < 10]`,
		`$..book[?@.price <= 8.99]`, `$..book[?@.price >= 12.99 && @.category == "fiction"]`, `$..[?@.price > 20 || @.color == 'red']`,
		`$..book[?!(@.price < 10)]`, `$..*[?@.k == 1]`, `$[?@.k == 0]`, `$[?@.k != 0]`, `$[?@ == 3]`, `$[?@ == "s"]`, `$[?@ == null]`,
		`$[?@ == true]`, `$[?@.a == $[1].a]`, `$..[?@ == $.wanted]`, `$[?@.wanted == @.copy]`, `$..[?count(@.*) > 1]`,
		`$..[?count($..*) > 0]`, `$..[?length(@) == 3]`, `$..[?length(@.title) > 15]`, `$..[?match(@.author, "[A-Z].*e.*")]`,
		`$..[?search(@.title, "of")]`, `$..[?!search(@.title, "of")]`, `$..[?match(@, "ab.c")]`, `$..[?value(@..c) == "ab\nc"]`,
		`$..[?count(@..[?@.price]) >= 2]`, `$..[?@..[?@ == 1]]`, `$..['a b']`, `$..["\u00e9"]`, `$["k\u0001\"q"]`, `$[?@["k\u0001\"q"]]`,
		`$..[?@ == -1]`, `$..[?@ < 1e3]`, `$..[?length(value(@..title)) > 1]`, `$..[?$.n == null]`, `$..[?@.e == $.e]`,
		`$..[?@.a.b.c]`, `$[?@.a[0] == 1]`, `$..[?@.k == "x"][?@.c]`, `$.nothing`, `$..book[?@.price == 8.95 || (@.price > 20 && @.isbn)]`,
		`$..[?count(@..*) == count(@.*)]`, `$[?length(@.a) == 3]`, `$..[?@.price == $.store.book[0].price]`,
	}
	for _, raw := range docs {
		doc, why := decodeJSON([]byte(raw))
		if why != "" {
			t.Fatal(why)
		}
		for _, q := range queries {
			path, err := jsonpath.Parse(q)
			if err != nil {
				t.Fatalf("Parse(%q): %v", q, err)
			}
			qs, err := compileQuery(path)
			if err != nil {
				t.Fatalf("compileQuery(%q): %v", q, err)
			}
			got, work, err := evaluateQuery(context.Background(), qs, doc, MaxQueryWork)
			if err != nil {
				t.Fatalf("evaluateQuery(%q): %v", q, err)
			}
			if work < 0 || work > 100_000 {
				t.Errorf("evaluateQuery(%q): %d units of work", q, work)
			}
			want := path.SelectLocated(doc)
			if diff := cmp.Diff(paths(want), paths(got)); diff != "" {
				t.Errorf("query %q on doc %.20s… (-jsonpath +bounded):\n%s", q, raw, diff)
			}
		}
	}
}

// quadratic is [{"k":0},…] with n objects, the body of issue 24's query.
func quadratic(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf(`{"k":%d}`, i)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// evaluating is how many goroutines are inside a query evaluation. Only
// evaluateQuery's frames count: a goroutine still parsing its query is in
// jsonpath/spec's constructors too, and counting those made
// TestQuerySlotsPerTenant see two of one tenant's queries at once under
// load.
func evaluating() int {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "service.evaluateQuery(") || strings.Contains(g, "service.(*evaluation)") {
			n++
		}
	}
	return n
}

// TestQueryWorkBudget: issue 24's quadratic query is refused by the work
// budget, at the budget (not minutes later), and nothing of it runs on.
func TestQueryWorkBudget(t *testing.T) {
	defer func(n int64) { maxQueryWork = n }(maxQueryWork)
	maxQueryWork = 1_000_000 // a faster test; the same code path
	e := newEnv(t, store.Quota{})
	doc := quadratic(4000)
	u := save(t, e, "q.json", "application/json", doc, toolapi.SaveOptions{})
	_, f := e.svc.Query(context.Background(), alice, &toolapi.QueryArgs{URI: u, Path: `$..[?count($..*) > 0]`})
	if f == nil || f.ErrorKind != KindValidation || !strings.Contains(f.Message, "units of work") {
		t.Fatalf("Query of the quadratic query = %+v, want a validation_error on the work budget", f)
	}
	if n := evaluating(); n != 0 {
		t.Fatalf("%d evaluations still run after the call returned", n)
	}
	// The evaluation stopped at the budget: the units it spent are the
	// budget and at most one node's selection beyond.
	v, _ := decodeJSON([]byte(doc))
	qs, err := compileQuery(jsonpath.MustParse(`$..[?count($..*) > 0]`))
	if err != nil {
		t.Fatal(err)
	}
	_, work, err := evaluateQuery(context.Background(), qs, v, maxQueryWork)
	if !errors.Is(err, errQueryWork) || work > maxQueryWork+8001 {
		t.Fatalf("evaluateQuery = %d units, %v; want errQueryWork at %d units", work, err, maxQueryWork)
	}
	// A canceled context stops it too.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := evaluateQuery(ctx, qs, v, maxQueryWork); !errors.Is(err, context.Canceled) {
		t.Fatalf("evaluateQuery with a canceled context: %v", err)
	}
}

// TestQueryNestedFiltersAreCounted: a query inside a filter inside a
// filter, with no function to interrupt it, is counted too.
func TestQueryNestedFiltersAreCounted(t *testing.T) {
	v, _ := decodeJSON([]byte(quadratic(300)))
	for _, q := range []string{`$..[?$..[?$..*]]`, `$..[?$ == $]`, `$..[?count($..[?count($..*) > 1]) > 1]`} {
		qs, err := compileQuery(jsonpath.MustParse(q))
		if err != nil {
			t.Fatal(err)
		}
		if _, work, err := evaluateQuery(context.Background(), qs, v, 200_000); !errors.Is(err, errQueryWork) {
			t.Errorf("evaluateQuery(%q) = %d units, %v; want errQueryWork", q, work, err)
		}
	}
}

// TestQuerySlotsPerTenant: one tenant's costly queries hold at most its
// share of the slots, and never make another tenant's queries wait.
func TestQuerySlotsPerTenant(t *testing.T) {
	defer func(n int64) { maxQueryWork = n }(maxQueryWork)
	maxQueryWork = 1_000_000
	// evaluating counts every evaluation in the process: let those an
	// earlier test's refused callers left unwinding end first.
	for deadline := time.Now().Add(time.Minute); evaluating() > 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d evaluations of earlier tests still running after a minute", evaluating())
		}
	}
	e := newEnv(t, store.Quota{})
	heavy := save(t, e, "q.json", "application/json", quadratic(4000), toolapi.SaveOptions{})
	light, f := e.svc.SaveReport(context.Background(), bob, &toolapi.ReportArgs{Path: "l.json", MIMEType: "application/json", Text: sp(`{"a":[7,8]}`)})
	if f != nil {
		t.Fatal(f)
	}
	var wg sync.WaitGroup
	for range querySlots + 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.svc.Query(context.Background(), alice, &toolapi.QueryArgs{URI: heavy, Path: `$..[?count($..*) > 0]`})
		}()
	}
	defer wg.Wait()
	for evaluating() == 0 {
		runtime.Gosched()
	}
	for _, q := range []string{`$.a[0]`, `$..[?@ == 8]`} {
		r, f := e.svc.Query(context.Background(), bob, &toolapi.QueryArgs{URI: light.Value.URI, Path: q})
		if f != nil || r.Count != 1 {
			t.Fatalf("bob's %s while alice's queries run = %+v, %v", q, r, f)
		}
	}
	if n := evaluating(); n > queryTenantSlots {
		t.Fatalf("alice has %d evaluations running, more than her %d slot", n, queryTenantSlots)
	}
}

func sp(s string) *string { return &s }
