package s3store

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// TestHTTPClientKeepsConnections: rounds of 32 concurrent requests reuse
// the connections of the first round with NewHTTPClient; the SDK's
// default client (10 idle per host) dials again every round.
func TestHTTPClientKeepsConnections(t *testing.T) {
	var dials atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			dials.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	rounds := func(c interface {
		Do(*http.Request) (*http.Response, error)
	}) int32 {
		dials.Store(0)
		for range 4 {
			var wg sync.WaitGroup
			start := make(chan struct{})
			for range 32 {
				wg.Go(func() {
					<-start
					req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
					resp, err := c.Do(req)
					if err != nil {
						t.Error(err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				})
			}
			close(start)
			wg.Wait()
		}
		return dials.Load()
	}
	if n := rounds(NewHTTPClient()); n > 32 {
		t.Errorf("NewHTTPClient: %d connections for 4 rounds of 32 requests, want at most 32", n)
	}
	if n := rounds(awshttp.NewBuildableClient()); n <= 32 {
		t.Logf("the SDK's default client also kept its connections (%d): the comparison shows nothing here", n)
	}
}
