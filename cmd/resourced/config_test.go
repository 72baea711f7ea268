package main

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/resourced/resourced/config"
	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/store/s3store"
)

// TestConfigExampleMatchesDefaults: configs/resourced.example.yaml shows
// every key with its default. Keys a component defaults itself are zero in
// config.Default(); the example must show the component's value.
func TestConfigExampleMatchesDefaults(t *testing.T) {
	c, err := config.Load("../../configs/resourced.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := validate(c); err != nil {
		t.Fatalf("example config does not validate: %v", err)
	}
	// effective fills in the defaults the components apply themselves
	// (config leaves them zero); the example shows their values.
	want := effective(config.Default())
	if diff := cmp.Diff(want, c, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("example config differs from the defaults (-default +example):\n%s", diff)
	}
	// The zero values config leaves to the components mean the same.
	if got := s3Options(config.Default()).ReadCache; got != s3store.DefaultReadCache {
		t.Errorf("unset store.s3.readCache = %d, want s3store.DefaultReadCache", got)
	}
}

func decode(t *testing.T, yaml string) *config.Config {
	t.Helper()
	c, err := config.Decode(strings.NewReader(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func wantProblems(t *testing.T, err error, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("validate error lacks %q:\n%v", w, err)
		}
	}
}

func TestConfigValidateAuth(t *testing.T) {
	err := validate(decode(t, `
auth:
  hmacSecretFile: /k
  jwksURL: ftp://x
  leeway: 1h
  algorithms: [HS256, none]
  jwksRefresh: 1ms
  tokenCache: 1h
`))
	wantProblems(t, err,
		"auth.hmacSecret: an HMAC key cannot be combined",
		"auth.jwksURL: ",
		"auth.leeway: must be between 0 and 5m",
		`auth.algorithms: unsupported algorithm "none"`,
		"auth.jwksRefresh: must be between 10s and 24h",
		"auth.tokenCache: must be at most 10m",
		"auth.issuer: required with publicKeyFiles or jwksURL",
	)
	if err := validate(decode(t, "auth: {publicKeyFiles: [/k.pem], jwksURL: \"https://idp/jwks\", issuer: i}\n")); err == nil ||
		!strings.Contains(err.Error(), "auth.jwksURL: may not be combined") {
		t.Errorf("jwksURL with publicKeyFiles: %v", err)
	}
	if err := validate(decode(t, "auth: {mode: none, leeway: 1h}\n")); err != nil {
		t.Errorf("auth.mode none checks the JWT settings: %v", err)
	}
	if err := validate(config.Default()); err != nil {
		t.Errorf("defaults: %v", err)
	}
}

func TestConfigValidateS3(t *testing.T) {
	err := validate(decode(t, "store:\n  backend: s3\n  s3: {endpoint: minio:9000, prefix: /x/, region: \"us east\", callTimeout: -1s}\n"))
	wantProblems(t, err, "store.s3.bucket: required", "store.s3.endpoint: ", "store.s3.prefix: ", "store.s3.region: ", "store.s3.callTimeout: must not be negative")
	// One rule for the prefix: s3store's, which refuses a trailing '/'.
	err = validate(decode(t, "store:\n  backend: s3\n  s3: {bucket: bkt, prefix: team/a/}\n"))
	wantProblems(t, err, `store.s3.prefix: "team/a/": no leading or trailing '/'`)
	if err := validate(decode(t, "store:\n  backend: s3\n  s3: {bucket: bkt, endpoint: \"http://127.0.0.1:7070\", pathStyle: true, prefix: team/a}\n")); err != nil {
		t.Errorf("valid s3 config: %v", err)
	}
	if err := validate(decode(t, "store:\n  s3: {prefix: /x/}\n")); err != nil {
		t.Errorf("store.s3 is checked with backend bbolt: %v", err)
	}
}

func TestConfigS3EndpointCredentialsNotEchoed(t *testing.T) {
	err := s3ClientOptions{Endpoint: "https://AKIDEXAMPLE:s3cr3t@s3.example.com"}.Validate()
	if err == nil {
		t.Fatal("Validate(endpoint with user info) = nil, want an error")
	}
	if strings.Contains(err.Error(), "s3cr3t") || strings.Contains(err.Error(), "AKIDEXAMPLE") {
		t.Errorf("Validate error %q repeats the credentials", err)
	}
}

// TestConfigS3ClientOffline: building the client does not contact S3, and
// the region falls back to defaultS3Region.
func TestConfigS3ClientOffline(t *testing.T) {
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_DEFAULT_REGION", "")
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_ACCESS_KEY_ID", "id")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	c, err := newS3Client(t.Context(), s3ClientOptions{Endpoint: "http://127.0.0.1:1", PathStyle: true})
	if err != nil {
		t.Fatalf("newS3Client = %v", err)
	}
	if o := c.Options(); o.Region != defaultS3Region || !o.UsePathStyle || o.BaseEndpoint == nil || *o.BaseEndpoint != "http://127.0.0.1:1" {
		t.Errorf("client options: region %q, path style %v, endpoint %v", o.Region, o.UsePathStyle, o.BaseEndpoint)
	}
	if hc, ok := c.Options().HTTPClient.(*awshttp.BuildableClient); !ok || hc.GetTransport().MaxIdleConnsPerHost != s3store.MaxIdleConns {
		t.Errorf("client HTTPClient %T: want s3store.NewHTTPClient's", c.Options().HTTPClient)
	}
	if _, err := newS3Client(t.Context(), s3ClientOptions{Endpoint: "ftp://x"}); err == nil {
		t.Error("newS3Client accepted an ftp endpoint")
	}
}

func TestConfigValidateBudgets(t *testing.T) {
	err := validate(decode(t, `
budgets:
  bodyMinRate: 10
  writeGrace: 2h
  maxConnections: -1
notifyMaxListenURIs: -1
`))
	wantProblems(t, err,
		"budgets.bodyMinRate: want at least 1KiB",
		"budgets.writeGrace: want 0 (the default) to 1h",
		"budgets.maxConnections: want 0 (the default) or more",
		"notifyMaxListenURIs: want 0 (the default) or more")
	c := decode(t, "budgets: {tenantInflight: 3, tenantSaveRate: 2.5, writeMinRate: 1MiB}\n")
	if b := budgets(c); b.MaxInflight != 3 || b.SaveRate != 2.5 || b.WriteMinRate != 1<<20 || b.BodyGrace != 0 {
		t.Errorf("budgets(%+v) = %+v", c.Budgets, b)
	}
}

// TestReconcileOnceContainsPanics: a panicking reconcile ends its round
// only, logged, and the process goes on.
func TestReconcileOnceContainsPanics(t *testing.T) {
	var logs strings.Builder
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	reconcileOnce(t.Context(), func(context.Context) ([]s3store.Reconciled, error) { panic("boom") }, log)
	if !strings.Contains(logs.String(), "panic in the usage reconcile") {
		t.Errorf("log = %s", logs.String())
	}
	reconcileOnce(t.Context(), func(context.Context) ([]s3store.Reconciled, error) {
		return []s3store.Reconciled{{Tenant: "a", After: store.Usage{Bytes: 1}}}, nil
	}, log)
	if !strings.Contains(logs.String(), `"tenant":"a"`) {
		t.Errorf("a changed tenant is not logged: %s", logs.String())
	}
}
