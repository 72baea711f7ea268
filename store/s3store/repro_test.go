package s3store

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestServerDeleteIfMatchIsAtomic checks the S3 server alone, without this
// package's logic: a DELETE with If-Match: E1 racing a PUT with If-Match:
// E1 on the same key may not both succeed (one of them must find the
// other's effect: a new ETag, or no object). versitygw v1.8.0 fails it:
// its DeleteObject compares the ETag and then removes the file outside the
// publish lock its PUTs hold, so the DELETE removes the object the PUT
// has just published; a DELETE of a missing key answers 204 even with
// If-Match. This is why Delete writes tombstones (package doc, "Delete").
// It runs only with RESOURCED_S3_SERVER_CHECKS=1, as a check of a server,
// not of s3store.
func TestServerDeleteIfMatchIsAtomic(t *testing.T) {
	if os.Getenv("RESOURCED_S3_SERVER_CHECKS") != "1" {
		t.Skip("checks the S3 server, not s3store; RESOURCED_S3_SERVER_CHECKS=1 runs it")
	}
	opts := serverOptions(t)
	opts.Prefix = uniquePrefix(t)
	s := openTest(t, opts)
	c, bucket := s.d.client, aws.String(s.d.bucket)
	key := aws.String(s.d.base + "race!")
	ctx := t.Context()
	put := func(body string, ifMatch *string) (string, error) {
		out, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: bucket, Key: key, Body: bytes.NewReader([]byte(body)), IfMatch: ifMatch}, callOptions)
		if err != nil {
			return "", err
		}
		return aws.ToString(out.ETag), nil
	}
	deadline := time.Now().Add(10 * time.Second)
	both := 0
	rounds := 0
	for ; rounds < 2000 && time.Now().Before(deadline) && both == 0; rounds++ {
		e1, err := put(fmt.Sprint("first ", rounds), nil)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var delErr, putErr error
		wg.Go(func() {
			_, delErr = c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: bucket, Key: key, IfMatch: aws.String(e1)}, callOptions)
		})
		wg.Go(func() { _, putErr = put(fmt.Sprint("second ", rounds), aws.String(e1)) })
		wg.Wait()
		if delErr == nil && putErr == nil {
			both++
			_, getErr := c.HeadObject(context.WithoutCancel(ctx), &s3.HeadObjectInput{Bucket: bucket, Key: key}, callOptions)
			t.Logf("round %d: DELETE If-Match E1 and PUT If-Match E1 both succeeded; HEAD afterwards: %v", rounds, getErr)
		}
	}
	if both > 0 {
		t.Errorf("the server let a DELETE and a PUT, both bound by If-Match to one ETag, succeed, and the object was gone afterwards (see the log)")
	}
	t.Logf("%d rounds", rounds)
}
