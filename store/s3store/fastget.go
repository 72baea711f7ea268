package s3store

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
)

// The one GET of a read (Driver.ReadGated) does not go through the SDK's
// GetObject: at 1 KiB its middleware stack and SigV4 signing were 44 % of
// resourced's CPU per resources/read (bench/README.md). It is a plain
// net/http GET of a presigned URL instead, sent by the HTTP client the
// s3.Client uses (so a transport the caller wraps sees it), with
// If-None-Match as an ordinary, unsigned header. The URL of each object key
// is presigned once (s3.PresignClient, the client's endpoint, addressing,
// region and credentials), valid for presignTTL, and reused for
// presignReuse, or until shortly before the credentials it was signed with
// expire. A 403 to a reused URL (credentials rotated, a clock step) drops it
// and presigns again, once.
//
// The URLs are credentials: they are kept in memory only, never logged, and
// no error of this package carries one (a transport error is unwrapped from
// its *url.Error, whose text has the URL; an S3 error keeps its status, code
// and message).
//
// Like the SDK, which retried its GetObject, a GET is sent up to
// getAttempts times while it fails transiently (a transport error, 500,
// 502, 503, 504, 429 or a throttling code), with jittered exponential
// pauses, all within the call deadline.
const (
	presignTTL   = 15 * time.Minute
	presignReuse = 10 * time.Minute
	// credsMargin: a URL is not reused past its credentials' expiry minus this.
	credsMargin = time.Minute
	// maxPresigned bounds the URL cache (about 1 KiB an entry); when full
	// of valid URLs it starts over.
	maxPresigned = 8192
	getAttempts  = 3
	// getBackoff is the first retry's pause bound; it doubles per attempt.
	getBackoff = 50 * time.Millisecond
	// maxErrorBody is how much of an error response is read for its code.
	maxErrorBody = 16 << 10
)

// presignedURL is one cached URL.
type presignedURL struct {
	url    string
	header http.Header // signed headers the request must carry (Host excluded)
	until  time.Time   // reuse before
}

// getter sends the GETs of reads.
type getter struct {
	presign *s3.PresignClient
	creds   aws.CredentialsProvider // nil: anonymous
	http    aws.HTTPClient
	bucket  string
	now     func() time.Time // wall clock of the reuse decisions

	mu   sync.Mutex
	urls map[string]presignedURL

	presigned atomic.Int64 // URLs presigned so far (tests)
}

func newGetter(client *s3.Client, bucket string) *getter {
	o := client.Options()
	return &getter{
		presign: s3.NewPresignClient(client, func(po *s3.PresignOptions) {
			po.Expires = presignTTL
			po.ClientOptions = append(po.ClientOptions, callOptions)
		}),
		creds:  o.Credentials,
		http:   o.HTTPClient,
		bucket: bucket,
		now:    time.Now,
		urls:   make(map[string]presignedURL),
	}
}

// url returns the presigned URL of objKey, from the cache unless fresh.
func (g *getter) url(ctx context.Context, objKey string, fresh bool) (presignedURL, bool, error) {
	now := g.now()
	if !fresh {
		g.mu.Lock()
		p, ok := g.urls[objKey]
		g.mu.Unlock()
		if ok && now.Before(p.until) {
			return p, true, nil
		}
	}
	req, err := g.presign.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(g.bucket), Key: aws.String(objKey)})
	if err != nil {
		return presignedURL{}, false, scrubURL(fmt.Errorf("presigning the GET: %w", err))
	}
	g.presigned.Add(1)
	p := presignedURL{url: req.URL, until: now.Add(presignReuse)}
	for name, v := range req.SignedHeader {
		if !strings.EqualFold(name, "Host") {
			if p.header == nil {
				p.header = make(http.Header)
			}
			p.header[http.CanonicalHeaderKey(name)] = v
		}
	}
	if g.creds != nil {
		// Cached by the SDK's provider: this does not fetch again.
		if c, err := g.creds.Retrieve(ctx); err == nil && c.CanExpire {
			if end := c.Expires.Add(-credsMargin); end.Before(p.until) {
				p.until = end
			}
		}
	}
	g.mu.Lock()
	if len(g.urls) >= maxPresigned {
		for k, q := range g.urls {
			if !now.Before(q.until) {
				delete(g.urls, k)
			}
		}
		if len(g.urls) >= maxPresigned {
			clear(g.urls)
		}
	}
	g.urls[objKey] = p
	g.mu.Unlock()
	return p, false, nil
}

// forget drops the cached URL of objKey if it is still u.
func (g *getter) forget(objKey, u string) {
	g.mu.Lock()
	if p, ok := g.urls[objKey]; ok && p.url == u {
		delete(g.urls, objKey)
	}
	g.mu.Unlock()
}

// get sends the GET of objKey, with If-None-Match: ifNoneMatch when set,
// and returns a 200 response (the caller closes its body). Any other
// answer is a *s3Error (304 included); a transport failure is an error
// without the URL. ctx carries the call deadline.
func (g *getter) get(ctx context.Context, objKey, ifNoneMatch string) (*http.Response, error) {
	fresh, represigned := false, false
	for attempt := 1; ; attempt++ {
		p, cached, err := g.url(ctx, objKey, fresh)
		if err != nil {
			return nil, err
		}
		fresh = false
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url, nil)
		if err != nil {
			return nil, errors.New("building the GET: the presigned URL does not parse")
		}
		for name, v := range p.header {
			req.Header[name] = v
		}
		// Not "gzip": net/http would then decompress and drop the length.
		req.Header.Set("Accept-Encoding", "identity")
		if ifNoneMatch != "" {
			req.Header.Set("If-None-Match", ifNoneMatch)
		}
		resp, err := g.http.Do(req)
		if err != nil {
			err = scrubURL(err)
			if ctx.Err() != nil || attempt >= getAttempts {
				return nil, err
			}
			if !pause(ctx, attempt) {
				return nil, err
			}
			continue
		}
		if resp.StatusCode == http.StatusOK {
			return resp, nil
		}
		ge := readS3Error(resp, "GET")
		switch {
		case ge.status == http.StatusForbidden && cached && !represigned:
			// The URL may have outlived its credentials: sign again, once.
			g.forget(objKey, p.url)
			fresh, represigned = true, true
			attempt-- // not a failure of S3
			continue
		case ge.transient() && attempt < getAttempts && ctx.Err() == nil:
			if !pause(ctx, attempt) {
				return nil, ge
			}
			continue
		}
		return nil, ge
	}
}

// pause waits before attempt+1, or reports false when ctx ends first.
func pause(ctx context.Context, attempt int) bool {
	d := time.Duration(rand.Int64N(int64(getBackoff) << (attempt - 1)))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// scrubURL returns err without the request URL a *url.Error puts in its
// text (a presigned URL is a credential); errors.Is still sees what it
// wraps (context.DeadlineExceeded, net errors).
func scrubURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return &scrubbedError{op: "GET", err: ue.Err}
	}
	return err
}

type scrubbedError struct {
	op  string
	err error
}

func (e *scrubbedError) Error() string { return e.op + " object: " + e.err.Error() }
func (e *scrubbedError) Unwrap() error { return e.err }

// s3Error is an S3 answer to a GET or PUT of ours (fastput.go) other than
// 200. It is a smithy.APIError and carries the status, so apiError,
// isMissing, isConflict and isNotModified classify it as they classify
// the SDK's errors.
type s3Error struct {
	op      string // "GET" or "PUT"
	status  int
	code    string // S3 error code; "" when the body had none
	message string
}

var _ smithy.APIError = (*s3Error)(nil)

func (e *s3Error) Error() string {
	s := e.op + " object: status " + strconv.Itoa(e.status)
	if e.code != "" {
		s += ", " + e.code
	}
	if e.message != "" {
		s += ": " + e.message
	}
	return s
}
func (e *s3Error) ErrorCode() string    { return e.code }
func (e *s3Error) ErrorMessage() string { return e.message }
func (e *s3Error) ErrorFault() smithy.ErrorFault {
	if e.status >= 500 {
		return smithy.FaultServer
	}
	return smithy.FaultClient
}

// transient reports an answer the SDK's standard retryer retries.
func (e *s3Error) transient() bool {
	switch e.status {
	case http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable,
		http.StatusGatewayTimeout, http.StatusTooManyRequests:
		return true
	}
	switch e.code {
	case "SlowDown", "Throttling", "ThrottlingException", "RequestThrottled", "RequestTimeout",
		"InternalError", "ServiceUnavailable", "RequestLimitExceeded", "TooManyRequestsException":
		return true
	}
	return false
}

// readS3Error reads S3's XML error of resp to op (a few KiB at most) and
// closes its body. A 304 (no body) is NotModified.
func readS3Error(resp *http.Response, op string) *s3Error {
	defer resp.Body.Close()
	e := &s3Error{op: op, status: resp.StatusCode}
	if resp.StatusCode == http.StatusNotModified {
		e.code = "NotModified"
		return e
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	var doc struct {
		Code    string `xml:"Code"`
		Message string `xml:"Message"`
	}
	if xml.Unmarshal(b, &doc) == nil {
		e.code = clip(doc.Code, 64)
		e.message = clip(doc.Message, 256)
		if strings.Contains(e.message, "X-Amz-") || strings.Contains(e.message, "Signature=") {
			e.message = "" // a server echoing the request; never repeat it
		}
	}
	return e
}

func clip(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		s = strings.ToValidUTF8(s[:n], "")
	}
	return s
}
