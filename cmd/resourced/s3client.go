package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/resourced/resourced/internal/telemetry"
	"github.com/resourced/resourced/store/s3store"
)

// defaultS3Region is the signing region when neither store.s3.region nor
// the AWS chain (AWS_REGION, shared config) names one.
const defaultS3Region = "us-east-1"

// s3ClientOptions are what store.s3 says about the S3 client (s3store.Open
// takes a ready one). Credentials come from the standard AWS chain
// (environment, shared files, SSO, container and instance roles), never
// from the configuration file.
type s3ClientOptions struct {
	// Region; "" means the chain's, then defaultS3Region.
	Region string
	// Endpoint of an S3-compatible server; "" means AWS (or AWS_ENDPOINT_URL_S3).
	Endpoint string
	// PathStyle addresses the bucket in the path.
	PathStyle bool
}

// Validate reports every problem of o, each naming its key below store.s3
// ("endpoint: ..."). An endpoint with credentials is never echoed.
func (o s3ClientOptions) Validate() error {
	var errs []error
	if o.Region != "" && !validRegion(o.Region) {
		errs = append(errs, fmt.Errorf("region: %q is not a region name (a-z, A-Z, 0-9, '-', '_')", o.Region))
	}
	if o.Endpoint != "" {
		if msg := checkEndpoint(o.Endpoint); msg != "" {
			errs = append(errs, errors.New("endpoint: "+msg))
		}
	}
	return errors.Join(errs...)
}

// newS3Client builds the client of o from the AWS chain. It does not
// contact S3.
func newS3Client(ctx context.Context, o s3ClientOptions) (*s3.Client, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	var load []func(*awsconfig.LoadOptions) error
	if o.Region != "" {
		load = append(load, awsconfig.WithRegion(o.Region))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, load...)
	if err != nil {
		return nil, fmt.Errorf("loading the AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		cfg.Region = defaultS3Region
	}
	return s3.NewFromConfig(cfg, func(so *s3.Options) {
		// Each S3 request a span carrying the trace context, when tracing
		// is on (internal/telemetry); the SDK's operation names it.
		so.HTTPClient = telemetry.Client(s3store.NewHTTPClient(), s3Operation)
		so.UsePathStyle = o.PathStyle
		if o.Endpoint != "" {
			so.BaseEndpoint = aws.String(o.Endpoint)
		}
	}), nil
}

// s3Operation names an S3 request's span: the SDK's operation, or, for
// s3store's own signed object requests (fastput.go, fastget.go), the
// operation their method is.
func s3Operation(r *http.Request) string {
	if op := awsmiddleware.GetOperationName(r.Context()); op != "" {
		return op
	}
	return map[string]string{http.MethodPut: "PutObject", http.MethodGet: "GetObject", http.MethodHead: "HeadObject"}[r.Method]
}

func validRegion(r string) bool {
	if len(r) > 64 {
		return false
	}
	for i := 0; i < len(r); i++ {
		if c := r[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// checkEndpoint returns what is wrong with an endpoint URL, or "". The URL
// is never echoed when it carries credentials.
func checkEndpoint(e string) string {
	u, err := url.Parse(e)
	if err != nil {
		return "not a URL"
	}
	if u.User != nil {
		return "must not contain credentials; use the AWS credential chain"
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return fmt.Sprintf("%q: want http:// or https:// and a host", e)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return fmt.Sprintf("%q: want no query or fragment", e)
	}
	return ""
}
