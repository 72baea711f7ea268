package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/resourced/resourced/config"
	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/store/s3store"
)

const s3CheckAbout = "Checks that the S3 service of store.s3 keeps the guarantees resourced relies on for safe saves\n" +
	"across instances (conditional writes atomic under concurrency, an object's ETag and body\n" +
	"published together, 404 for a missing key, listing order): the probe every s3 start runs,\n" +
	"under a private prefix it removes again. Prints one line per guarantee. Exit 0 when the\n" +
	"service keeps every one that is not advisory; 1 when it does not (serve then refuses it,\n" +
	"unless store.s3.unsafeAllowSingleWriter) or the probe could not run; 2 for a bad command\n" +
	"line or configuration. docs/s3.md has the results per service."

const s3Usage = `usage: resourced s3 check [--config FILE]

` + s3CheckAbout + "\n"

// s3Cmd is `resourced s3 check`.
func s3Cmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "-h", "-help", "--help", "help":
			fmt.Fprint(stdout, s3Usage)
			return nil
		}
	}
	if len(args) == 0 || args[0] != "check" {
		what := "no subcommand"
		if len(args) > 0 {
			what = fmt.Sprintf("unknown subcommand %q", args[0])
		}
		return usageError(fmt.Errorf("s3: %s\nrun 'resourced s3 check --help'", what))
	}
	fs := newFlagSet("s3 check", "resourced s3 check [--config FILE]", s3CheckAbout)
	path := fs.String("config", getenv("RESOURCED_CONFIG"), "YAML config file")
	if err := parseFlags(fs, args[1:], stdout, stderr); err != nil {
		return err
	}
	cfg, err := loadFile(*path, getenv)
	if err != nil {
		return invalidConfig(err)
	}
	if cfg.Store.Backend != "s3" {
		return invalidConfig(fmt.Errorf("s3 check works on the s3 backend; store.backend is %q", cfg.Store.Backend))
	}
	if err := validate(cfg); err != nil {
		return invalidConfig(fmt.Errorf("invalid configuration: %w", err))
	}
	client, err := newS3Client(ctx, s3Client(cfg))
	if err != nil {
		return config.Under("store.s3", err)
	}
	opts := s3Options(cfg)
	opts.SingleWriter = false // the probe writes no object of the store: no lease needed
	st, err := s3store.Open(client, opts)
	if err != nil {
		return err
	}
	defer st.Close()
	rep, err := st.Probe(ctx)
	if err != nil {
		return fmt.Errorf("the probe of the S3 service could not run: %w", err)
	}
	printProbe(stdout, &rep)
	if err := rep.Err(); err != nil {
		if cfg.Store.S3.UnsafeAllowSingleWriter {
			fmt.Fprintln(stdout, "store.s3.unsafeAllowSingleWriter is set: one instance will serve on it, holding the prefix's lease")
		}
		return &exitError{1, err}
	}
	fmt.Fprintln(stdout, keptSummary(&rep))
	return nil
}

// keptSummary is the last line of a probe whose service is accepted: it
// names the advisory guarantees that failed, so that "keeps every
// guarantee" does not read as if the failed lines above did not count.
func keptSummary(rep *s3store.ProbeReport) string {
	var advisory []string
	for _, r := range rep.Results {
		if !r.OK && r.Advisory {
			advisory = append(advisory, r.Name)
		}
	}
	s := fmt.Sprintf("the S3 service keeps every guarantee resourced needs (%d checked in %v)", len(rep.Results), rep.Took.Round(1e6))
	if len(advisory) > 0 {
		s += "; it fails the advisory " + strings.Join(advisory, ", ") + ", which makes a feature slower, not unsafe (see above)"
	}
	return s
}

// printProbe prints one line per result: guarantee, verdict, detail.
func printProbe(w io.Writer, rep *s3store.ProbeReport) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range rep.Results {
		verdict := "ok"
		switch {
		case !r.OK && r.Advisory:
			verdict = "failed (advisory)"
		case !r.OK:
			verdict = "FAILED"
		}
		detail := r.Want
		if !r.OK {
			detail = r.Detail
		}
		took := fmt.Sprintf("%dms", r.Took.Milliseconds())
		if r.Derived {
			took = "-" // judged from the requests of a check above
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Name, verdict, took, detail)
	}
	_ = tw.Flush()
}

// probeS3 runs the probe when st is the s3 store, as every serve does
// before it listens: each result is a log line and a sample of
// resourced_s3_guarantee. A service that fails a guarantee is refused,
// unless store.s3.unsafeAllowSingleWriter, which then takes the prefix's
// lease (and takes it whatever the probe found).
func probeS3(ctx context.Context, cfg *config.Config, st store.Backend, log *slog.Logger, reg prometheus.Registerer) error {
	s, ok := st.(*s3store.Store)
	if !ok {
		return nil
	}
	rep, err := s.Probe(ctx)
	if err != nil {
		return fmt.Errorf("checking the S3 service's guarantees (docs/s3.md; `resourced s3 check` runs the same probe): %w", err)
	}
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "resourced_s3_guarantee",
		Help: "1 when the S3 service kept the guarantee in the start-up probe, 0 when it did not (docs/s3.md).",
	}, []string{"guarantee", "advisory"})
	for _, r := range rep.Results {
		v := 0.0
		if r.OK {
			v = 1
		}
		g.WithLabelValues(r.Name, fmt.Sprint(r.Advisory)).Set(v)
		switch {
		case r.OK:
			log.Debug("s3 guarantee kept", "guarantee", r.Name)
		case r.Advisory:
			log.Warn("s3 guarantee failed (advisory)", "guarantee", r.Name, "detail", r.Detail, "want", r.Want)
		default:
			log.Error("s3 guarantee failed", "guarantee", r.Name, "detail", r.Detail, "want", r.Want)
		}
	}
	reg.MustRegister(g)
	log.Info("s3 probe", "guarantees", len(rep.Results), "failed", len(rep.Failed()), "ms", rep.Took.Milliseconds())
	if err := rep.Err(); err != nil {
		if !cfg.Store.S3.UnsafeAllowSingleWriter {
			return err
		}
		log.Warn("store.s3.unsafeAllowSingleWriter: serving on an S3 service that fails the probe; this instance must be the only one on the prefix")
	}
	if cfg.Store.S3.UnsafeAllowSingleWriter {
		if err := s.HoldLease(ctx); err != nil {
			return err
		}
		log.Info("holding the single-writer lease of the prefix")
	}
	return nil
}
