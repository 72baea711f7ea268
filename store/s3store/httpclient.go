package s3store

import (
	"net/http"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// MaxIdleConns is how many idle connections to the S3 endpoint the HTTP
// client of NewHTTPClient keeps. The SDK's default keeps 10 per host, so a
// server with more S3 requests in flight than that closed the extra
// connections after every burst and dialled new ones: at c=16 reads of
// 256 KiB, dialling was 10 % of resourced's CPU (bench/README.md). The
// requests in flight are bounded by the server's own limits (per-tenant
// in-flight requests, upload slots), so idle connections beyond that are
// never used and cost one socket each.
const MaxIdleConns = 256

// NewHTTPClient returns the HTTP client an s3.Client for this package
// should use (s3.Options.HTTPClient): the SDK's own client (so AWS_CA_BUNDLE
// and the SDK's timeouts still apply) keeping MaxIdleConns idle
// connections to the endpoint.
func NewHTTPClient() *awshttp.BuildableClient {
	return awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
		t.MaxIdleConns = MaxIdleConns
		t.MaxIdleConnsPerHost = MaxIdleConns
	})
}
