package s3store

import (
	"context"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/encoding/httpbinding"
)

// The object PUT of a save (putObject, for records up to maxFastPut) and
// the PUT of a usage object (putUsage) do not go through the SDK's
// PutObject either: with the fast call path in
// front of it, the SDK's middleware stack (endpoint rules evaluated per
// call, the deep stack each request goroutine grows into) was 30 % of
// resourced's CPU per 1 KiB save on S3 (bench/README.md). It is a plain
// net/http PUT sent by the HTTP client the s3.Client uses (so a transport
// the caller wraps sees it), signed by the SDK's own SigV4 signer with the
// client's credentials, to the bucket URL the client's endpoint resolver
// gives once (Options.EndpointResolverV2 with the client's region,
// endpoint and addressing). Where that resolution gives something else
// than a plain SigV4 "s3" endpoint (S3 Express, multi-region access
// points, an ARN), or fails, every PUT goes through the SDK as before.
//
// What the SDK did, this does: the same headers (Content-MD5, Content-Type,
// the x-amz-meta-* members, If-None-Match or If-Match), the payload's
// SHA-256 in the signature on plain HTTP and UNSIGNED-PAYLOAD over TLS, up
// to putAttempts sends while the answer is transient (a transport error,
// 500, 502, 503, 504, 429, a throttling code) with jittered exponential
// pauses, reporting whether more than one was sent (retried: the first
// may have landed), and errors that apiError, isConflict and
// isTransientLayout classify as the SDK's (s3Error). No error carries the
// URL or a signature.
const (
	putAttempts = 3
	// maxFastPut is the largest record sent this way; larger ones go
	// through the SDK, whose cost is small beside their bytes.
	maxFastPut = 1 << 20
)

// putter sends the object PUTs of saves.
type putter struct {
	client *s3.Client
	bucket string
	creds  aws.CredentialsProvider // nil: anonymous
	http   aws.HTTPClient
	signer *v4.Signer

	once   sync.Once
	base   string // the bucket's URL without a trailing slash; "" when the SDK must send
	region string // the signing region
	tls    bool

	sent atomic.Int64 // PUTs sent this way (tests)
}

func newPutter(client *s3.Client, bucket string) *putter {
	o := client.Options()
	return &putter{
		client: client,
		bucket: bucket,
		creds:  o.Credentials,
		http:   o.HTTPClient,
		signer: v4.NewSigner(func(so *v4.SignerOptions) { so.DisableURIPathEscaping = true }),
	}
}

// resolve finds the bucket's URL once, as the client's endpoint resolver
// gives it, and reports whether PUTs can be sent here.
func (p *putter) resolve(ctx context.Context) bool {
	p.once.Do(func() {
		o := p.client.Options()
		if o.EndpointResolverV2 == nil || o.Region == "" || o.HTTPClient == nil {
			return
		}
		ep, err := o.EndpointResolverV2.ResolveEndpoint(ctx, s3.EndpointParameters{
			Bucket:         aws.String(p.bucket),
			Region:         aws.String(o.Region),
			Endpoint:       o.BaseEndpoint,
			ForcePathStyle: aws.Bool(o.UsePathStyle),
			UseFIPS:        aws.Bool(o.EndpointOptions.UseFIPSEndpoint == aws.FIPSEndpointStateEnabled),
			UseDualStack:   aws.Bool(o.EndpointOptions.UseDualStackEndpoint == aws.DualStackEndpointStateEnabled),
			Accelerate:     aws.Bool(o.UseAccelerate),
		})
		if err != nil || ep.URI.Scheme != "http" && ep.URI.Scheme != "https" || ep.URI.RawQuery != "" {
			return
		}
		region, ok := plainSigV4(ep.Properties.Get("authSchemes"), o.Region)
		if !ok {
			return
		}
		u := ep.URI
		p.base = strings.TrimSuffix(u.String(), "/")
		p.region = region
		p.tls = u.Scheme == "https"
	})
	return p.base != ""
}

// plainSigV4 reports whether the endpoint's auth schemes are plain SigV4
// for service "s3" (or none named, the default), and its signing region.
func plainSigV4(schemes any, region string) (string, bool) {
	if schemes == nil {
		return region, true
	}
	list, ok := schemes.([]any)
	if !ok || len(list) == 0 {
		return "", false
	}
	m, ok := list[0].(map[string]any)
	if !ok || m["name"] != "sigv4" {
		return "", false
	}
	if name, _ := m["signingName"].(string); name != "" && name != "s3" {
		return "", false
	}
	if r, _ := m["signingRegion"].(string); r != "" {
		region = r
	}
	if d, _ := m["disableDoubleEncoding"].(bool); !d {
		return "", false // S3 signs the path as sent; anything else is not S3's rule
	}
	return region, true
}

// put sends the PUT of objKey with header (the request headers beyond
// the signature's), content from open (a fresh reader per attempt) of
// length n and SHA-256 sum (nil over TLS: unsigned), and returns the new
// object's ETag and whether more than one attempt was sent. ctx carries
// the call deadline.
func (p *putter) put(ctx context.Context, objKey string, header http.Header, open func() io.Reader, n int64, sum []byte) (etag string, retried bool, err error) {
	hash := "UNSIGNED-PAYLOAD"
	if !p.tls {
		hash = hex.EncodeToString(sum)
	}
	target := p.base + "/" + httpbinding.EscapePath(objKey, false)
	for attempt := 1; ; attempt++ {
		retried = attempt > 1
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, target, open())
		if err != nil {
			return "", retried, errors.New("building the PUT: the object URL does not parse")
		}
		req.ContentLength = n
		for k, v := range header {
			req.Header[k] = v
		}
		req.Header.Set("X-Amz-Content-Sha256", hash)
		if p.creds != nil {
			c, err := p.creds.Retrieve(ctx)
			if err != nil {
				return "", retried, scrubPut(err)
			}
			if err := p.signer.SignHTTP(ctx, c, req, hash, "s3", p.region, time.Now().UTC()); err != nil {
				return "", retried, scrubPut(err)
			}
		}
		p.sent.Add(1)
		resp, err := p.http.Do(req)
		if err != nil {
			err = scrubPut(err)
			if ctx.Err() != nil || attempt >= putAttempts || !pause(ctx, attempt) {
				return "", retried, err
			}
			continue
		}
		if resp.StatusCode >= 200 && resp.StatusCode < 300 { // as the SDK: any 2xx (201, 204 from some servers and proxies)
			io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
			resp.Body.Close()
			return resp.Header.Get("ETag"), retried, nil
		}
		se := readS3Error(resp, "PUT")
		if se.transient() && attempt < putAttempts && ctx.Err() == nil && pause(ctx, attempt) {
			continue
		}
		return "", retried, se
	}
}

// scrubPut is scrubURL for a PUT: the URL has no credentials, but the
// error texts of this package never carry one.
func scrubPut(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return &scrubbedError{op: "PUT", err: ue.Err}
	}
	return err
}

// fastPutHeader is the header of a PUT of a body of ctype as the SDK's
// PutObject serializes the same input.
func fastPutHeader(md5sum, ctype string, meta map[string]string, pc putCond) http.Header {
	h := make(http.Header, 4+len(meta))
	h.Set("Content-Md5", md5sum)
	h.Set("Content-Type", ctype)
	for k, v := range meta {
		h.Set("X-Amz-Meta-"+k, v)
	}
	if pc.ifNoneMatch {
		h.Set("If-None-Match", "*")
	}
	if pc.ifMatch != "" {
		h.Set("If-Match", pc.ifMatch)
	}
	return h
}
