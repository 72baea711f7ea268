package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/resourced/resourced/config"
	"github.com/resourced/resourced/store/s3store"
)

// reconcile recounts the per-tenant usage of an S3 bucket from a listing
// and corrects the usage objects that quotas are checked against
// (s3store's package doc, "Quotas"). It is safe while servers run: saves
// made during the count are kept, and at worst counted twice until the
// next reconcile. Progress goes to stderr (progress), with --quiet
// nothing does.
//
//	resourced reconcile [--quiet] [--config FILE] [--tenant T]
func reconcile(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var tenant string
	cfg, quiet, err := storeCommand{name: "reconcile", synopsis: "resourced reconcile [--quiet] [--config FILE] [--tenant T]",
		about: "Recounts each tenant's usage on the s3 backend from a listing of its objects and corrects the usage\n" +
			"object quotas are checked against. Safe while servers run; without --tenant, every tenant.",
		backends: []string{"s3"}, why: " (bbolt keeps usage in the same transaction as the objects)",
		flags: func(fs *flag.FlagSet) { fs.StringVar(&tenant, "tenant", "", "reconcile this tenant only") }}.load(args, getenv, stdout, stderr)
	if err != nil {
		return err
	}
	client, err := newS3Client(ctx, s3Client(cfg))
	if err != nil {
		return config.Under("store.s3", err)
	}
	st, err := s3store.Open(client, s3Options(cfg))
	if err != nil {
		return err
	}
	defer st.Close()
	// s3store reports nothing until a tenant (or every tenant) is
	// recounted, and lists the tenants only inside ReconcileAll: a spinner
	// and the time, then the summary.
	p := startProgress(stderr, quiet, "reconcile")
	if tenant != "" {
		p.begin("recounting tenant "+tenant, "", -1)
	} else {
		p.begin("recounting every tenant", "", -1)
	}
	var results []s3store.Reconciled
	if tenant != "" {
		b, a, err := st.Reconcile(ctx, tenant)
		results = append(results, s3store.Reconciled{Tenant: tenant, Before: b, After: a, Err: err})
	} else if results, err = st.ReconcileAll(ctx); err != nil && len(results) == 0 {
		p.finish(false, "failed", -1, -1)
		return err
	}
	failed := 0
	var objects, bytes int64
	for _, r := range results {
		if r.Err != nil {
			failed++
			fmt.Fprintf(stdout, "%s: %v\n", r.Tenant, r.Err)
			continue
		}
		objects, bytes = objects+r.After.Objects, bytes+r.After.Bytes
		fmt.Fprintf(stdout, "%s: %d bytes in %d objects (was %d bytes in %d objects)\n",
			r.Tenant, r.After.Bytes, r.After.Objects, r.Before.Bytes, r.Before.Objects)
	}
	outcome := fmt.Sprintf("recounted %d of %d tenants:", len(results)-failed, len(results))
	p.finish(failed == 0, outcome, objects, bytes)
	if failed > 0 {
		return fmt.Errorf("%d of %d tenants not reconciled", failed, len(results))
	}
	fmt.Fprintf(stdout, "%d tenants reconciled\n", len(results))
	return nil
}
