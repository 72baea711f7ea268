package main

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// s3Direct is the S3 ceiling of a read: the same object fetched straight
// from the same S3 server with a presigned GET, loaded by the same workers
// in alternated slices. It is what one read of this size costs at the
// storage, without MCP, auth or resourced in the way; resources/read on S3
// is reported as a ratio to it.
type s3Direct struct {
	endpoint, bucket, prefix, region string
}

// objectKey is the S3 key s3store gives the resource at uri
// (<prefix>/<tenant>/<scheme>!/<path>!, store/s3store/keys.go); the bench
// may not import the store, so the layout is restated here and checked by
// the first GET, which must answer 200.
func (d *s3Direct) objectKey(uri string) (string, error) {
	scheme, rest, ok := strings.Cut(uri, "://")
	if !ok {
		return "", errors.New("s3 direct: not a URI: " + uri)
	}
	tenant, path, ok := strings.Cut(rest, "/")
	if !ok || tenant == "" || path == "" {
		return "", errors.New("s3 direct: no tenant and path in " + uri)
	}
	base := strings.Trim(d.prefix, "/")
	if base != "" {
		base += "/"
	}
	return base + tenant + "/" + scheme + "!/" + path + "!", nil
}

// client is an S3 client signing with the AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY of the environment.
func (d *s3Direct) client() (*s3.Client, error) {
	id, secret := os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY")
	if id == "" || secret == "" {
		return nil, errors.New("s3 direct: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set")
	}
	region := d.region
	if region == "" {
		region = "us-east-1"
	}
	return s3.New(s3.Options{
		Region:       region,
		BaseEndpoint: aws.String(d.endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(id, secret, ""),
	}), nil
}

// putter returns a function presigning a create-only PUT (If-None-Match:
// *) of a new object for each call: the S3 ceiling of a save, which is a
// conditional PUT of a new object too.
func (d *s3Direct) putter() (func(w *worker) (string, error), error) {
	c, err := d.client()
	if err != nil {
		return nil, err
	}
	ps := s3.NewPresignClient(c)
	base := strings.Trim(d.prefix, "/")
	if base != "" {
		base += "/"
	}
	return func(w *worker) (string, error) {
		w.seq++
		key := base + "bench-direct/" + w.run + "/" + strconv.Itoa(w.id) + "-" + strconv.FormatInt(w.seq, 10)
		req, err := ps.PresignPutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(d.bucket), Key: aws.String(key), IfNoneMatch: aws.String("*")},
			s3.WithPresignExpires(time.Hour))
		if err != nil {
			return "", err
		}
		return req.URL, nil
	}, nil
}

// presign returns a GET URL of the object of uri valid for ttl, signed with
// the AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY of the environment.
func (d *s3Direct) presign(ctx context.Context, uri string, ttl time.Duration) (string, error) {
	key, err := d.objectKey(uri)
	if err != nil {
		return "", err
	}
	c, err := d.client()
	if err != nil {
		return "", err
	}
	req, err := s3.NewPresignClient(c).PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(d.bucket), Key: aws.String(key)},
		s3.WithPresignExpires(ttl))
	if err != nil {
		return "", err
	}
	return req.URL, nil
}
