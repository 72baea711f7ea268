package server

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/store/memstore"
)

// countingStore counts the backend calls a listen may and may not make:
// Stat (metadata) against Get and View (bodies).
type countingStore struct {
	store.Backend
	gets, views, stats atomic.Int64
}

func (c *countingStore) Get(ctx context.Context, k store.Key) (*store.Object, error) {
	c.gets.Add(1)
	return c.Backend.Get(ctx, k)
}

func (c *countingStore) Stat(ctx context.Context, k store.Key) (store.Meta, error) {
	c.stats.Add(1)
	return c.Backend.Stat(ctx, k)
}

func (c *countingStore) View(ctx context.Context, k store.Key, fn func(m *store.Meta, encoded, body []byte) error) error {
	c.views.Add(1)
	return c.Backend.View(ctx, k, fn)
}

// ReadIf reads a body too (the service's View).
func (c *countingStore) ReadIf(ctx context.Context, k store.Key, allow func(*store.Meta) bool, fn func(m *store.Meta, encoded, body []byte) error) error {
	c.views.Add(1)
	return c.Backend.ReadIf(ctx, k, allow, fn)
}

type notifyEnv struct {
	s   *Server
	st  *countingStore
	url string
}

// newNotifyEnv starts a server on a counting memory store, with callers
// named by their X-Tenant header (tenantAuth), polling every 20ms unless
// opts says otherwise.
func newNotifyEnv(t *testing.T, opts Options) *notifyEnv {
	t.Helper()
	st := &countingStore{Backend: memstore.New(memstore.Options{})}
	opts.Store = st
	opts.Auth = tenantAuth{}
	opts.BaseURL = "http://notify.test"
	if opts.PollInterval == 0 {
		opts.PollInterval = 20 * time.Millisecond
	}
	opts.Schemes = []Scheme{{Name: "report", Kind: KindReport, Retention: time.Hour, MaxRetention: time.Hour, MaxBytes: 16 << 20}}
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	hs := httptest.NewServer(s)
	t.Cleanup(func() { hs.Close(); cancel(); <-done })
	return &notifyEnv{s: s, st: st, url: hs.URL}
}

// put writes straight to the store, as another instance sharing it would.
func (e *notifyEnv) put(t *testing.T, tenant, path, body string, vis store.Visibility) {
	t.Helper()
	now := time.Now()
	_, _, err := e.st.Put(context.Background(), &store.Object{Meta: store.Meta{
		Key: store.MustKey(tenant, "report", path), MIMEType: "text/plain", Size: int64(len(body)), SHA256: store.Sum([]byte(body)),
		Created: now, Modified: now, Expires: now.Add(time.Hour), Visibility: vis,
	}, Body: []byte(body)}, store.Cond{})
	if err != nil {
		t.Fatal(err)
	}
}

// listenAnswer is what a raw subscriptions/listen got first: the
// acknowledgement, or an error.
type listenAnswer struct {
	acked   bool
	code    int64
	message string
	data    string
}

// rawListen opens a subscriptions/listen as tenant naming uris and returns
// its first answer; the stream stays open until the test ends or close is
// called.
func (e *notifyEnv) rawListen(t *testing.T, tenant string, uris []string) (listenAnswer, func()) {
	t.Helper()
	subs, _ := json.Marshal(uris)
	body := `{"jsonrpc":"2.0","id":7,"method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientInfo":{"name":"x","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}},` +
		`"notifications":{"resourceSubscriptions":` + string(subs) + `}}}`
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.url+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	req.Header.Set("X-Tenant", tenant)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	closeFn := func() { cancel(); resp.Body.Close() }
	t.Cleanup(func() { resp.Body.Close() })
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := strings.TrimPrefix(sc.Text(), "data: ")
		var msg struct {
			Method string `json:"method"`
			Error  *struct {
				Code    int64           `json:"code"`
				Message string          `json:"message"`
				Data    json.RawMessage `json:"data"`
			} `json:"error"`
		}
		if json.Unmarshal([]byte(line), &msg) != nil {
			continue
		}
		if msg.Error != nil {
			return listenAnswer{code: msg.Error.Code, message: msg.Error.Message, data: string(msg.Error.Data)}, closeFn
		}
		if msg.Method == "notifications/subscriptions/acknowledged" {
			return listenAnswer{acked: true}, closeFn
		}
	}
	t.Fatalf("listen as %s: stream ended without an answer (status %d, err %v)", tenant, resp.StatusCode, sc.Err())
	return listenAnswer{}, closeFn
}

// TestListenResolvesMetadataOnly: a listen never reads a body, and a URI
// named many times costs one Stat (issue 13, finding 3).
func TestListenResolvesMetadataOnly(t *testing.T) {
	e := newNotifyEnv(t, Options{PollInterval: time.Hour}) // no polling Stats
	e.put(t, "t1", "big", strings.Repeat("x", 1<<20), store.Private)
	e.put(t, "t1", "pub", "public body", store.Public)
	uri := "report://t1/big"
	uris := make([]string, 2000)
	for i := range uris {
		uris[i] = uri
	}
	a, _ := e.rawListen(t, "t1", uris)
	if !a.acked {
		t.Fatalf("listen naming %s 2000 times: %+v, want it acknowledged (repeats are one URI)", uri, a)
	}
	if g, v, s := e.st.gets.Load(), e.st.views.Load(), e.st.stats.Load(); g != 0 || v != 0 || s != 1 {
		t.Errorf("listen naming one URI 2000 times: %d Get, %d View, %d Stat; want 0, 0, 1", g, v, s)
	}

	// Refusals read no body either, and a foreign private URI is answered
	// exactly as one that never existed.
	never, _ := e.rawListen(t, "t2", []string{"report://t1/never"})
	foreign, _ := e.rawListen(t, "t2", []string{uri})
	if never.code != -32602 || foreign.code != -32602 || never.message != foreign.message ||
		strings.Replace(never.data, "never", "big", 1) != foreign.data {
		t.Errorf("listen to an unknown URI: %+v; to a foreign private one: %+v; want the same -32602", never, foreign)
	}
	if pub, _ := e.rawListen(t, "t2", []string{"report://t1/pub"}); !pub.acked {
		t.Errorf("listen to a foreign public URI: %+v, want it acknowledged", pub)
	}
	if g, v := e.st.gets.Load(), e.st.views.Load(); g != 0 || v != 0 {
		t.Errorf("listens read bodies: %d Get, %d View", g, v)
	}
}

// TestListenCaps: distinct URIs per listen and concurrent listens per
// tenant are capped, with a -32602 that states the cap; closing a listen
// frees its place.
func TestListenCaps(t *testing.T) {
	e := newNotifyEnv(t, Options{MaxListenURIs: 3, MaxListensPerTenant: 2})
	var uris []string
	for i := range 4 {
		p := "r" + strconv.Itoa(i)
		e.put(t, "t1", p, "body", store.Private)
		uris = append(uris, "report://t1/"+p)
	}
	a, _ := e.rawListen(t, "t1", uris)
	if a.code != -32602 || !strings.Contains(a.message, "at most 3 ") {
		t.Errorf("listen naming 4 distinct URIs: %+v, want -32602 stating the cap of 3", a)
	}
	// Repeats do not count against the cap.
	first, closeFirst := e.rawListen(t, "t1", append(append([]string{}, uris[:3]...), uris[:3]...))
	if !first.acked {
		t.Fatalf("listen naming 3 distinct URIs twice each: %+v, want it acknowledged", first)
	}
	if second, _ := e.rawListen(t, "t1", uris[3:]); !second.acked {
		t.Fatalf("second listen: %+v, want it acknowledged", second)
	}
	third, _ := e.rawListen(t, "t1", uris[:1])
	if third.code != -32602 || !strings.Contains(third.message, "at most 2 ") {
		t.Errorf("third concurrent listen of a tenant: %+v, want -32602 stating the cap of 2", third)
	}
	e.put(t, "t2", "mine", "body", store.Private)
	if other, _ := e.rawListen(t, "t2", []string{"report://t2/mine"}); !other.acked {
		t.Errorf("another tenant's listen: %+v, want it acknowledged", other)
	}
	// A refused listen held nothing; a closed one frees its place.
	closeFirst()
	deadline := time.Now().Add(5 * time.Second)
	for {
		again, closeAgain := e.rawListen(t, "t1", uris[:1])
		if again.acked {
			break
		}
		closeAgain()
		if time.Now().After(deadline) {
			t.Fatalf("listen after closing one: %+v, want it acknowledged", again)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// tenantClient is an http.Client whose requests carry X-Tenant.
func tenantClient(tenant string) *http.Client {
	return &http.Client{Transport: tenantTransport(tenant)}
}

type tenantTransport string

func (tt tenantTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Tenant", string(tt))
	return http.DefaultTransport.RoundTrip(r)
}

// sdkListener is a go-sdk client session of one tenant that records the
// resource updates it hears.
type sdkListener struct {
	cs      *mcp.ClientSession
	updates chan string
}

func (e *notifyEnv) sdkSession(t *testing.T, tenant string) *sdkListener {
	t.Helper()
	l := &sdkListener{updates: make(chan string, 64)}
	c := mcp.NewClient(&mcp.Implementation{Name: "notify-test", Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			l.updates <- req.Params.URI
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: e.url + "/mcp", HTTPClient: tenantClient(tenant)},
		&mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	l.cs = cs
	return l
}

func (l *sdkListener) subscribe(t *testing.T, uri string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := l.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
		t.Fatalf("subscribe to %s: %v", uri, err)
	}
}

func (l *sdkListener) want(t *testing.T, uri, what string) {
	t.Helper()
	select {
	case got := <-l.updates:
		if got != uri {
			t.Fatalf("%s: update for %s, want %s", what, got, uri)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: no notifications/resources/updated for %s", what, uri)
	}
}

// drain returns what l heard within d.
func (l *sdkListener) drain(d time.Duration) []string {
	var got []string
	deadline := time.After(d)
	for {
		select {
		case u := <-l.updates:
			got = append(got, u)
		case <-deadline:
			return got
		}
	}
}

func (l *sdkListener) tool(t *testing.T, name string, args map[string]any) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := l.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if res.IsError {
		b, _ := json.Marshal(res.Content)
		t.Fatalf("%s: %s", name, b)
	}
	v, _ := res.StructuredContent.(map[string]any)
	return v
}

// TestNotificationsFollowReadAccess: a listener of another tenant's public
// resource hears nothing once it may no longer read it, and hears again
// once it may (issue 13, finding 4). Changes made through this server
// (notified at once) and straight in the store (found by polling) alike.
func TestNotificationsFollowReadAccess(t *testing.T) {
	for _, via := range []string{"tools", "store"} {
		t.Run(via, func(t *testing.T) {
			e := newNotifyEnv(t, Options{})
			owner, other := e.sdkSession(t, "t1"), e.sdkSession(t, "t2")
			uri := "report://t1/shared"
			save := func(text string, vis store.Visibility) {
				if via == "store" {
					e.put(t, "t1", "shared", text, vis)
					return
				}
				owner.tool(t, "save_report", map[string]any{"path": "shared", "mimeType": "text/plain", "text": text, "visibility": string(vis), "overwrite": true})
			}
			del := func() {
				if via == "store" {
					if err := e.st.Delete(context.Background(), store.MustKey("t1", "report", "shared"), store.Cond{}); err != nil {
						t.Fatal(err)
					}
					return
				}
				owner.tool(t, "delete_resource", map[string]any{"uri": uri})
			}

			save("v1", store.Public)
			owner.subscribe(t, uri)
			other.subscribe(t, uri)
			save("v2", store.Public)
			owner.want(t, uri, "public replace, owner")
			other.want(t, uri, "public replace, other tenant")

			// Each step is heard by the owner, so it has been processed
			// before the next; the other tenant must hear none of them.
			save("v2", store.Private)
			owner.want(t, uri, "made private")
			save("v3", store.Private)
			owner.want(t, uri, "private replace")
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if _, err := other.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri}); err == nil {
				t.Fatalf("other tenant read the private resource")
			}
			del()
			owner.want(t, uri, "delete")
			save("v4", store.Private)
			owner.want(t, uri, "re-created private")
			save("v5", store.Private)
			owner.want(t, uri, "replaced again")
			if got := other.drain(300 * time.Millisecond); len(got) != 0 {
				t.Fatalf("other tenant heard %d notifications while it could not read %s: %v", len(got), uri, got)
			}

			// Public again: its listen stream is still open and hears of it.
			save("v5", store.Public)
			owner.want(t, uri, "public again, owner")
			other.want(t, uri, "public again, other tenant")
			if got := append(owner.drain(200*time.Millisecond), other.drain(0)...); len(got) != 0 {
				t.Errorf("duplicate notifications: %v", got)
			}
		})
	}
}

// TestPollCostsOneStatPerURI: polling costs one Stat per distinct watched
// URI however many listens name it, and never reads a body.
func TestPollCostsOneStatPerURI(t *testing.T) {
	e := newNotifyEnv(t, Options{PollInterval: time.Hour})
	e.put(t, "t1", "a", "a", store.Public)
	e.put(t, "t1", "b", "b", store.Public)
	for _, tenant := range []string{"t1", "t2", "t3"} {
		for range 2 {
			if a, _ := e.rawListen(t, tenant, []string{"report://t1/a", "report://t1/b"}); !a.acked {
				t.Fatalf("listen as %s: %+v", tenant, a)
			}
		}
	}
	before := e.st.stats.Load()
	e.s.notify.Poll(context.Background())
	if n := e.st.stats.Load() - before; n != 2 {
		t.Errorf("one poll of 2 URIs with 6 listens each made %d Stats, want 2", n)
	}
	if g, v := e.st.gets.Load(), e.st.views.Load(); g != 0 || v != 0 {
		t.Errorf("polling read bodies: %d Get, %d View", g, v)
	}
}
