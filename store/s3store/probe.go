package s3store

import (
	"context"
	"crypto/md5"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// This file probes the S3 service for the guarantees the package doc
// relies on ("Preconditions", "Delete", "Listing", "Expiry"), with the raw
// client and no logic of this package, under a private prefix
// (<prefix>/!probe/<random>/, which no tenant, listing or sweep covers)
// that it removes again. resourced runs it at every start of an s3
// backend and as `resourced s3 check`; docs/s3.md has the results per
// service.

// Guarantee is one property of the S3 service this package relies on.
type Guarantee struct {
	// Name is short and stable: a metric label and a log field.
	Name string
	// Want says what the service must do.
	Want string
	// Advisory guarantees make a feature slower when they fail, not a
	// save unsafe: the service is not refused for them.
	Advisory bool
	// Derived guarantees are judged from an earlier check's requests and
	// take no time of their own.
	Derived bool
}

// Guarantees are what Probe checks, in the order it checks them.
var Guarantees = []Guarantee{
	{Name: "create-only", Want: "a PUT with If-None-Match: * of an existing key fails with 412 and changes nothing"},
	{Name: "if-match", Want: "a PUT with If-Match: <current ETag> succeeds; one with a stale ETag fails with 412 and changes nothing"},
	{Name: "if-match-missing", Want: "a PUT with If-Match of a missing key fails (412 or 404) and creates nothing"},
	{Name: "create-only-race", Want: "of concurrent If-None-Match: * PUTs of one key exactly one succeeds, and the key then holds its body"},
	{Name: "if-match-race", Want: "of concurrent PUTs bound by If-Match to one ETag exactly one succeeds, and the key then holds its body"},
	{Name: "read-atomic", Want: "a GET never returns an ETag newer than its body, also while a replace is under way (with If-Match too)"},
	{Name: "read-exact", Want: "a GET returns the ETag and the body of one write, and one with If-Match: <ETag> that ETag's body (else a streamed read may mix two writes)", Advisory: true, Derived: true},
	{Name: "get-if-match", Want: "a GET with If-Match of a stale ETag fails with 412; with the current one it returns the object"},
	{Name: "missing-is-404", Want: "a GET or HEAD of a missing key answers 404 with If-Match and with If-None-Match, not 412"},
	{Name: "range", Want: "a ranged GET past the end of an object returns the whole object"},
	{Name: "list-order", Want: "ListObjectsV2 keeps a/x! beside a/x/y! and lists keys in byte order after StartAfter"},
	{Name: "delete-if-match", Want: "a DELETE with If-Match of a stale ETag fails and keeps the object"},
	{Name: "get-if-none-match", Want: "a GET with If-None-Match: <current ETag> answers 304 (else the read cache is off)", Advisory: true},
	{Name: "race-latency", Want: "each of the racing conditional PUTs above answers within 1 s (else a tenant's saves from several instances wait on its usage object)", Advisory: true, Derived: true},
}

// probeRacers is how many requests each race of the probe sends at once.
// read-atomic chains at least probeReplaces replaces and goes on, to
// probeMaxReplaces at most, until its probeReaders have read probeMinReads
// times: on a loaded machine the readers fall behind the writer, and a
// chain of fixed length then samples too few reads to catch a window a
// replace leaves open (versitygw --sidecar's was missed three times in a
// row on a loaded CI machine with 45-55 reads; an idle one makes 60-130).
// A racing PUT has raceTimeout (or the call timeout, if longer): a service
// may queue contended conditional writes for seconds (SeaweedFS retries
// its object lock once a second), which race-latency reports.
const (
	probeRacers      = 4
	probeReplaces    = 12
	probeMaxReplaces = 64
	probeReaders     = 4
	probeMinReads    = 150
	raceTimeout      = 30 * time.Second
	raceSlow         = time.Second
)

// probeDir is the key segment, below the prefix, of the probe's objects.
const probeDir = "!probe/"

// ProbeResult is the outcome of one guarantee.
type ProbeResult struct {
	Guarantee
	OK bool
	// Detail says what the service did when it failed (or, when it
	// passed, anything worth knowing); never credentials.
	Detail string
	Took   time.Duration
}

// ProbeReport is the outcome of one Probe.
type ProbeReport struct {
	Results []ProbeResult
	Took    time.Duration
}

// Failed returns the results of the guarantees that failed and that the
// service is refused for (not the advisory ones).
func (r *ProbeReport) Failed() []ProbeResult {
	var out []ProbeResult
	for _, x := range r.Results {
		if !x.OK && !x.Advisory {
			out = append(out, x)
		}
	}
	return out
}

// Err is nil when the service keeps every guarantee that is not
// advisory; otherwise it names each failed one, what the service did and
// what to do instead.
func (r *ProbeReport) Err() error {
	failed := r.Failed()
	if len(failed) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString("the S3 service does not keep what resourced relies on for safe saves:")
	for _, x := range failed {
		fmt.Fprintf(&b, "\n  %s: %s; want: %s", x.Name, x.Detail, x.Want)
	}
	b.WriteString("\nwhat to do: run a service (or a mode or version of it) that keeps these (docs/s3.md lists the ones checked:" +
		" versitygw v1.8.0+ posix with metadata in xattrs, not --sidecar); or, for one instance only, set" +
		" store.s3.unsafeAllowSingleWriter: true (a lease object then keeps every other instance out)")
	return errors.New(b.String())
}

// Probe checks the S3 service for Guarantees under a private prefix that
// it removes again (what it cannot remove is reported in the error). It
// takes a few hundred requests: 0.3 to 1.5 s on loopback (docs/s3.md),
// longer on a service that queues contended writes. The error is
// non-nil when the probe could not run (no answer, no permission, the
// bucket missing); a service that failed a guarantee is a report whose
// Err is non-nil.
func (s *Store) Probe(ctx context.Context) (ProbeReport, error) {
	return s.d.probe(ctx)
}

// prober runs the probe's requests, each without SDK retries: a retry
// would hide (or fake) the answer the service gave.
type prober struct {
	// wrote is set once a PUT may have stored something: it succeeded, or
	// it failed without the service's refusal (a lost answer). Until then
	// the cleanup's failure is the probe's own failure again, not news.
	wrote   atomic.Bool
	s       *Driver
	base    string        // the probe's own prefix
	exact   string        // what readAtomic found for read-exact
	slowest time.Duration // the slowest racing PUT
}

func noRetries(o *s3.Options) {
	callOptions(o)
	o.Retryer = aws.NopRetryer{}
}

// put sends one PUT of body at key; ifNoneMatch sends If-None-Match: *,
// ifMatch If-Match.
// with changes the request before it is sent.
func (p *prober) put(ctx context.Context, key, body string, ifNoneMatch bool, ifMatch string, with ...func(*s3.PutObjectInput)) (string, error) {
	return p.putWithin(ctx, p.s.timeout, key, body, ifNoneMatch, ifMatch, with...)
}

func (p *prober) putWithin(ctx context.Context, timeout time.Duration, key, body string, ifNoneMatch bool, ifMatch string, with ...func(*s3.PutObjectInput)) (string, error) {
	sum := md5.Sum([]byte(body))
	in := &s3.PutObjectInput{
		Bucket:        aws.String(p.s.bucket),
		Key:           aws.String(p.base + key),
		Body:          strings.NewReader(body),
		ContentLength: aws.Int64(int64(len(body))),
		ContentMD5:    aws.String(base64.StdEncoding.EncodeToString(sum[:])),
		ContentType:   aws.String(contentType),
	}
	if ifNoneMatch {
		in.IfNoneMatch = aws.String("*")
	}
	if ifMatch != "" {
		in.IfMatch = aws.String(ifMatch)
	}
	for _, f := range with {
		f(in)
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out, err := p.s.client.PutObject(cctx, in, noRetries)
	if status, _ := apiError(err); err == nil || status < 400 || status > 499 {
		p.wrote.Store(true)
	}
	if err != nil {
		return "", err
	}
	return aws.ToString(out.ETag), nil
}

// get sends one GET of key with the given conditions and range ("" for
// none) and returns the ETag and body.
func (p *prober) get(ctx context.Context, key, ifMatch, ifNoneMatch, rng string) (string, string, error) {
	in := &s3.GetObjectInput{Bucket: aws.String(p.s.bucket), Key: aws.String(p.base + key)}
	if ifMatch != "" {
		in.IfMatch = aws.String(ifMatch)
	}
	if ifNoneMatch != "" {
		in.IfNoneMatch = aws.String(ifNoneMatch)
	}
	if rng != "" {
		in.Range = aws.String(rng)
	}
	cctx, cancel := p.s.call(ctx)
	defer cancel()
	out, err := p.s.client.GetObject(cctx, in, noRetries)
	if err != nil {
		return "", "", err
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	return aws.ToString(out.ETag), string(b), err
}

func (p *prober) head(ctx context.Context, key, ifMatch, ifNoneMatch string) error {
	in := &s3.HeadObjectInput{Bucket: aws.String(p.s.bucket), Key: aws.String(p.base + key)}
	if ifMatch != "" {
		in.IfMatch = aws.String(ifMatch)
	}
	if ifNoneMatch != "" {
		in.IfNoneMatch = aws.String(ifNoneMatch)
	}
	cctx, cancel := p.s.call(ctx)
	defer cancel()
	_, err := p.s.client.HeadObject(cctx, in, noRetries)
	return err
}

func (p *prober) delete(ctx context.Context, key, ifMatch string) error {
	in := &s3.DeleteObjectInput{Bucket: aws.String(p.s.bucket), Key: aws.String(p.base + key)}
	if ifMatch != "" {
		in.IfMatch = aws.String(ifMatch)
	}
	cctx, cancel := p.s.call(ctx)
	defer cancel()
	_, err := p.s.client.DeleteObject(cctx, in, noRetries)
	return err
}

// answer says in a few words what a request's error was: its status and
// code, or "succeeded".
func answer(err error) string {
	if err == nil {
		return "succeeded"
	}
	status, code := apiError(err)
	if status == 0 && code == "" {
		return "failed: " + err.Error()
	}
	if code == "" {
		return fmt.Sprintf("answered %d", status)
	}
	return fmt.Sprintf("answered %d %s", status, code)
}

func is412(err error) bool {
	status, code := apiError(err)
	return status == http.StatusPreconditionFailed || code == "PreconditionFailed"
}

// errProbeBroken marks a request of the probe that failed for another
// reason than a guarantee: the probe could not run.
var errProbeBroken = errors.New("unexpected answer")

// broken is the error of a request that should have worked.
func broken(what string, err error) error {
	return fmt.Errorf("%w: %s: %w", errProbeBroken, what, err)
}

func (s *Driver) probe(ctx context.Context) (ProbeReport, error) {
	if err := s.begin(ctx, "probe"); err != nil {
		return ProbeReport{}, err
	}
	start := time.Now()
	p := &prober{s: s, base: s.base + probeDir + newWriteID()[:16] + "/"}
	checks := map[string]func(context.Context) (string, error){
		"create-only":       p.createOnly,
		"if-match":          p.ifMatch,
		"if-match-missing":  p.ifMatchMissing,
		"create-only-race":  p.createOnlyRace,
		"if-match-race":     p.ifMatchRace,
		"read-atomic":       p.readAtomic,
		"read-exact":        p.readExact,
		"get-if-match":      p.getIfMatch,
		"missing-is-404":    p.missingIs404,
		"range":             p.rangePastEnd,
		"list-order":        p.listOrder,
		"delete-if-match":   p.deleteIfMatch,
		"get-if-none-match": p.getIfNoneMatch,
		"race-latency":      p.raceLatency,
	}
	var rep ProbeReport
	var err error
	for _, g := range Guarantees {
		var failure string
		t0 := time.Now()
		failure, err = checks[g.Name](ctx)
		if err != nil {
			err = fmt.Errorf("%s: %w", g.Name, err)
			break
		}
		rep.Results = append(rep.Results, ProbeResult{Guarantee: g, OK: failure == "", Detail: failure, Took: time.Since(t0)})
	}
	if cerr := p.cleanup(context.WithoutCancel(ctx), p.base, time.Time{}); cerr != nil && (err == nil || p.wrote.Load()) {
		err = errors.Join(err, cerr)
	}
	// What an earlier probe left (it crashed, or lost its answers) goes too.
	if cerr := p.cleanup(context.WithoutCancel(ctx), s.base+probeDir, start.Add(-staleProbe)); cerr != nil && err == nil {
		err = cerr
	}
	rep.Took = time.Since(start)
	if err != nil {
		if ctx.Err() != nil {
			return rep, fmt.Errorf("s3store: probe: %w", ctx.Err())
		}
		return rep, fmt.Errorf("s3store: probe: %w", err)
	}
	return rep, nil
}

// staleProbe is the age past which a probe object is another probe's
// leftover (a variable for the tests).
var staleProbe = 10 * time.Minute

// cleanup removes the objects below prefix, only those last modified
// before olderThan when that is set.
func (p *prober) cleanup(ctx context.Context, prefix string, olderThan time.Time) error {
	var token *string
	for {
		cctx, cancel := p.s.call(ctx)
		out, err := p.s.client.ListObjectsV2(cctx, &s3.ListObjectsV2Input{
			Bucket: aws.String(p.s.bucket), Prefix: aws.String(prefix), ContinuationToken: token,
		}, callOptions)
		cancel()
		if err != nil {
			return fmt.Errorf("removing the probe's objects below %s: %w", prefix, err)
		}
		for _, o := range out.Contents {
			if !olderThan.IsZero() && !aws.ToTime(o.LastModified).Before(olderThan) {
				continue
			}
			cctx, cancel := p.s.call(ctx)
			_, err := p.s.client.DeleteObject(cctx, &s3.DeleteObjectInput{Bucket: aws.String(p.s.bucket), Key: o.Key}, callOptions)
			cancel()
			if err != nil && !isMissing(err) {
				return fmt.Errorf("removing the probe's object %s: %w", aws.ToString(o.Key), err)
			}
		}
		if !aws.ToBool(out.IsTruncated) || aws.ToString(out.NextContinuationToken) == "" {
			return nil
		}
		token = out.NextContinuationToken
	}
}

// holds reports whether key holds body (and, when etag is set, that ETag);
// "" when it does, else what it holds.
func (p *prober) holds(ctx context.Context, key, etag, body string) (string, error) {
	e, b, err := p.get(ctx, key, "", "", "")
	if err != nil {
		if isMissing(err) {
			return "the key is missing", nil
		}
		return "", broken("GET "+key, err)
	}
	switch {
	case b != body:
		return fmt.Sprintf("the key holds %q, want %q", clip(b, 40), body), nil
	case etag != "" && e != etag:
		return fmt.Sprintf("the key's ETag is %s, want %s (the winner's)", e, etag), nil
	}
	return "", nil
}

func (p *prober) createOnly(ctx context.Context) (string, error) {
	if _, err := p.put(ctx, "create!", "first", true, ""); err != nil {
		return "", broken("PUT If-None-Match: * of a new key", err)
	}
	_, err := p.put(ctx, "create!", "second", true, "")
	if !is412(err) {
		return "the second create-only PUT " + answer(err), nil
	}
	return p.holds(ctx, "create!", "", "first")
}

func (p *prober) ifMatch(ctx context.Context) (string, error) {
	e1, err := p.put(ctx, "match!", "one", false, "")
	if err != nil {
		return "", broken("PUT of a new key", err)
	}
	e2, err := p.put(ctx, "match!", "two", false, e1)
	if err != nil {
		return "PUT If-Match: <current ETag> " + answer(err), nil
	}
	if e2 == e1 {
		return "a replace by another body kept the ETag " + e1, nil
	}
	_, err = p.put(ctx, "match!", "three", false, e1)
	if !is412(err) {
		return "PUT If-Match: <stale ETag> " + answer(err), nil
	}
	return p.holds(ctx, "match!", e2, "two")
}

func (p *prober) ifMatchMissing(ctx context.Context) (string, error) {
	_, err := p.put(ctx, "absent!", "x", false, `"0123456789abcdef0123456789abcdef"`)
	if err == nil || !isConflict(err) {
		return "PUT If-Match of a missing key " + answer(err), nil
	}
	if why, err := p.holds(ctx, "absent!", "", ""); err != nil || why != "the key is missing" {
		if err != nil {
			return "", err
		}
		return "after a refused PUT If-Match of a missing key, the key exists", nil
	}
	return "", nil
}

// race sends probeRacers PUTs of key at once, each with its own body,
// and returns the ETag and body of the one winner, or what went wrong.
func (p *prober) race(ctx context.Context, key string, ifNoneMatch bool, ifMatch string) (string, error) {
	type result struct {
		etag, body string
		err        error
		took       time.Duration
	}
	results := make([]result, probeRacers)
	var wg sync.WaitGroup
	startLine := make(chan struct{})
	for i := range results {
		wg.Go(func() {
			body := fmt.Sprintf("racer %d", i)
			<-startLine
			t0 := time.Now()
			e, err := p.putWithin(ctx, max(raceTimeout, p.s.timeout), key, body, ifNoneMatch, ifMatch)
			results[i] = result{e, body, err, time.Since(t0)}
		})
	}
	close(startLine)
	wg.Wait()
	var winners []result
	var others []string
	for _, r := range results {
		p.slowest = max(p.slowest, r.took)
		switch {
		case r.err == nil:
			winners = append(winners, r)
		case isConflict(r.err):
		default:
			if ctx.Err() != nil {
				return "", ctx.Err()
			}
			others = append(others, answer(r.err))
		}
	}
	if len(others) > 0 {
		slices.Sort(others)
		return "", fmt.Errorf("%w: racing PUTs of one key: %s", errProbeBroken, strings.Join(slices.Compact(others), ", "))
	}
	if len(winners) != 1 {
		return fmt.Sprintf("%d of %d concurrent PUTs succeeded", len(winners), probeRacers), nil
	}
	return p.holds(ctx, key, winners[0].etag, winners[0].body)
}

func (p *prober) createOnlyRace(ctx context.Context) (string, error) {
	return p.race(ctx, "create-race!", true, "")
}

func (p *prober) ifMatchRace(ctx context.Context) (string, error) {
	e, err := p.put(ctx, "match-race!", "base", false, "")
	if err != nil {
		return "", broken("PUT of a new key", err)
	}
	return p.race(ctx, "match-race!", false, e)
}

// withHeaders gives a replace of read-atomic's the headers S3 keeps with
// an object. A service that stores them apart from the data writes each
// apart, and a window it leaves open between the new ETag and the new
// data stays open while it does: versitygw --sidecar writes one file per
// header between the two, which makes its window several times wider.
func withHeaders(in *s3.PutObjectInput) {
	in.CacheControl = aws.String("no-store")
	in.ContentDisposition = aws.String("inline")
	in.ContentLanguage = aws.String("en")
	in.Metadata = map[string]string{"probe": "read-atomic"}
}

// readAtomic runs a chain of If-Match replaces of one key, each with its
// own body, while probeReaders read it, by turns plainly and with If-Match
// of the last ETag they saw. A read whose ETag is newer than its body
// fails read-atomic: a replace deciding on that body and bound to that
// ETag overwrites a newer write. A read whose ETag is older than its body,
// or a read bound by If-Match to one write that returns another's body,
// fails read-exact (readExact returns it): a conditional write then only
// fails and is tried again, but a streamed read may mix two writes.
func (p *prober) readAtomic(ctx context.Context) (string, error) {
	const key = "read-race!"
	// Bodies of different lengths and contents, long enough that a
	// server writing data in place would be seen half way.
	body := func(i int) string { return strings.Repeat(fmt.Sprintf("write %d;", i), 64+i) }
	etag, err := p.put(ctx, key, body(0), false, "")
	if err != nil {
		return "", broken("PUT of a new key", err)
	}
	var mu sync.Mutex
	writeOf := map[string]int{etag: 0} // ETag -> write
	bodyOf := map[string]int{body(0): 0}
	type read struct {
		ifMatch, etag, body string
	}
	var reads []read
	var readErr error
	done := make(chan struct{})
	var wg, started sync.WaitGroup
	started.Add(probeReaders)
	for range probeReaders {
		wg.Go(func() {
			last := ""
			for n := 0; ; n++ {
				if n == 1 {
					started.Done()
				}
				select {
				case <-done:
					return
				default:
				}
				ifMatch := ""
				if n%2 == 1 {
					ifMatch = last
				}
				e, b, err := p.get(ctx, key, ifMatch, "", "")
				if ifMatch != "" && is412(err) {
					continue // replaced since: as it should
				}
				mu.Lock()
				if err != nil && readErr == nil {
					readErr = err
				} else if err == nil {
					reads = append(reads, read{ifMatch, e, b})
				}
				mu.Unlock()
				if err != nil {
					if n == 0 {
						started.Done()
					}
					return
				}
				last = e
			}
		})
	}
	// Every reader has a connection and one read behind it before the
	// first replace, so the chain is not over before they begin.
	started.Wait()
	readCount := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(reads)
	}
	var writeErr error
	for i := 1; i <= probeMaxReplaces && (i <= probeReplaces || readCount() < probeMinReads); i++ {
		b := body(i)
		e, err := p.put(ctx, key, b, false, etag, withHeaders)
		if err != nil {
			writeErr = err
			break
		}
		mu.Lock()
		writeOf[e], bodyOf[b] = i, i
		mu.Unlock()
		etag = e
	}
	close(done)
	wg.Wait()
	switch {
	case writeErr != nil && is412(writeErr):
		return "a replace bound by If-Match to the ETag its predecessor returned " + answer(writeErr), nil
	case writeErr != nil:
		return "", broken("PUT If-Match", writeErr)
	case readErr != nil:
		return "", broken("GET", readErr)
	}
	p.exact = ""
	for _, r := range reads {
		w, ok := writeOf[r.etag]
		if !ok {
			return fmt.Sprintf("a GET returned ETag %s, which no PUT returned (%d reads)", r.etag, len(reads)), nil
		}
		bw, ok := bodyOf[r.body]
		if !ok {
			return fmt.Sprintf("a GET returned a body no PUT sent (%d bytes; %d reads)", len(r.body), len(reads)), nil
		}
		bound := w
		if r.ifMatch != "" {
			bound = writeOf[r.ifMatch]
		}
		switch {
		case w > bw || bound > bw:
			return fmt.Sprintf("a GET returned the ETag of write %d with the body of the older write %d (%d reads)", max(w, bound), bw, len(reads)), nil
		case r.ifMatch != "" && bound != bw && p.exact == "":
			p.exact = fmt.Sprintf("a GET with If-Match: <ETag of write %d> returned the body of write %d", bound, bw)
		case w != bw && p.exact == "":
			p.exact = fmt.Sprintf("a GET returned the ETag of write %d with the body of the newer write %d", w, bw)
		}
	}
	if p.exact != "" {
		p.exact += fmt.Sprintf(" (%d reads)", len(reads))
	}
	return "", nil
}

// raceLatency reports the slowest racing PUT of create-only-race and
// if-match-race (which run first).
func (p *prober) raceLatency(context.Context) (string, error) {
	if p.slowest > raceSlow {
		return fmt.Sprintf("the slowest of %d racing conditional PUTs of one key took %v", probeRacers, p.slowest.Round(time.Millisecond)), nil
	}
	return "", nil
}

// readExact reports what readAtomic (which runs first) found for
// read-exact.
func (p *prober) readExact(context.Context) (string, error) { return p.exact, nil }

func (p *prober) getIfMatch(ctx context.Context) (string, error) {
	e1, err := p.put(ctx, "get-match!", "old", false, "")
	if err != nil {
		return "", broken("PUT of a new key", err)
	}
	e2, err := p.put(ctx, "get-match!", "new", false, "")
	if err != nil {
		return "", broken("PUT of a key", err)
	}
	if _, _, err := p.get(ctx, "get-match!", e1, "", "bytes=0-1"); !is412(err) {
		return "a ranged GET with If-Match: <stale ETag> " + answer(err), nil
	}
	if _, b, err := p.get(ctx, "get-match!", e2, "", ""); err != nil || b != "new" {
		if err != nil {
			return "a GET with If-Match: <current ETag> " + answer(err), nil
		}
		return fmt.Sprintf("a GET with If-Match: <current ETag> returned %q, want \"new\"", clip(b, 40)), nil
	}
	return "", nil
}

func (p *prober) missingIs404(ctx context.Context) (string, error) {
	const etag = `"0123456789abcdef0123456789abcdef"`
	for _, c := range []struct {
		what string
		err  func() error
	}{
		{"GET If-Match", func() error { _, _, err := p.get(ctx, "missing!", etag, "", ""); return err }},
		{"GET If-None-Match", func() error { _, _, err := p.get(ctx, "missing!", "", etag, ""); return err }},
		{"HEAD If-Match", func() error { return p.head(ctx, "missing!", etag, "") }},
		{"HEAD If-None-Match", func() error { return p.head(ctx, "missing!", "", etag) }},
	} {
		err := c.err()
		if status, _ := apiError(err); status != http.StatusNotFound {
			if err != nil && status == 0 && ctx.Err() == nil {
				return "", broken(c.what+" of a missing key", err)
			}
			return c.what + " of a missing key " + answer(err), nil
		}
	}
	return "", nil
}

func (p *prober) rangePastEnd(ctx context.Context) (string, error) {
	if _, err := p.put(ctx, "range!", "short", false, ""); err != nil {
		return "", broken("PUT of a new key", err)
	}
	_, b, err := p.get(ctx, "range!", "", "", fmt.Sprintf("bytes=0-%d", headProbe-1))
	if err != nil {
		return fmt.Sprintf("GET Range: bytes=0-%d of a 5-byte object %s", headProbe-1, answer(err)), nil
	}
	if b != "short" {
		return fmt.Sprintf("GET Range: bytes=0-%d of a 5-byte object returned %q", headProbe-1, clip(b, 40)), nil
	}
	return "", nil
}

// listOrder stores keys shaped like the package's layout ("Layout" in the
// package doc) and lists them.
func (p *prober) listOrder(ctx context.Context) (string, error) {
	keys := []string{"l/a!/x!", "l/a!/x/y!", "l/a+b!/x!", "l/a-b!/x!", "l/a.b!/x!"}
	for _, k := range keys {
		if _, err := p.put(ctx, k, "x", false, ""); err != nil {
			if status, _ := apiError(err); status/100 == 4 {
				return fmt.Sprintf("PUT %s beside the others %s", k, answer(err)), nil
			}
			return "", broken("PUT "+k, err)
		}
	}
	want := slices.Clone(keys)
	slices.Sort(want)
	list := func(startAfter string, max int32) ([]string, error) {
		in := &s3.ListObjectsV2Input{Bucket: aws.String(p.s.bucket), Prefix: aws.String(p.base + "l/"), MaxKeys: aws.Int32(max)}
		if startAfter != "" {
			in.StartAfter = aws.String(p.base + startAfter)
		}
		cctx, cancel := p.s.call(ctx)
		defer cancel()
		out, err := p.s.client.ListObjectsV2(cctx, in, noRetries)
		if err != nil {
			return nil, err
		}
		var got []string
		for _, o := range out.Contents {
			got = append(got, strings.TrimPrefix(aws.ToString(o.Key), p.base))
		}
		return got, nil
	}
	got, err := list("", 1000)
	if err != nil {
		return "", broken("ListObjectsV2", err)
	}
	if !slices.Equal(got, want) {
		return fmt.Sprintf("ListObjectsV2 returned %q, want %q", got, want), nil
	}
	got, err = list(want[1], 2)
	if err != nil {
		return "", broken("ListObjectsV2 StartAfter", err)
	}
	if !slices.Equal(got, want[2:4]) {
		return fmt.Sprintf("ListObjectsV2 StartAfter %q MaxKeys 2 returned %q, want %q", want[1], got, want[2:4]), nil
	}
	return "", nil
}

func (p *prober) deleteIfMatch(ctx context.Context) (string, error) {
	e1, err := p.put(ctx, "delete!", "old", false, "")
	if err != nil {
		return "", broken("PUT of a new key", err)
	}
	if _, err := p.put(ctx, "delete!", "new", false, e1); err != nil {
		return "", broken("PUT If-Match", err)
	}
	err = p.delete(ctx, "delete!", e1)
	if why, herr := p.holds(ctx, "delete!", "", "new"); herr != nil || why != "" {
		if herr != nil {
			return "", herr
		}
		return "DELETE If-Match: <stale ETag> " + answer(err) + "; then " + why, nil
	}
	if err == nil {
		return "DELETE If-Match: <stale ETag> succeeded (the object is still there)", nil
	}
	return "", nil
}

func (p *prober) getIfNoneMatch(ctx context.Context) (string, error) {
	e, err := p.put(ctx, "cache!", "cached", false, "")
	if err != nil {
		return "", broken("PUT of a new key", err)
	}
	_, _, err = p.get(ctx, "cache!", "", e, "")
	if !isNotModified(err) {
		return "GET If-None-Match: <current ETag> " + answer(err), nil
	}
	return "", nil
}
