package main

import (
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// revision and buildDate are the VCS revision and commit time, stamped
// with -ldflags "-X main.revision=... -X main.buildDate=..." by
// scripts/release.sh and the Containerfile, whose builds carry no VCS
// information of their own (-buildvcs=false; no .git in a container's
// build context). Unset, they come from the build information of a build
// in a checkout (go build, go install).
var revision, buildDate = "", ""

// vcsInfo is the revision, commit time and modified flag of this build:
// the stamped values, else the Go toolchain's vcs.* build settings.
func vcsInfo(readBuildInfo func() (*debug.BuildInfo, bool)) (rev, date string, modified bool) {
	if bi, ok := readBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				date = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if revision != "" {
		rev, modified = revision, false
	}
	if buildDate != "" {
		date = buildDate
	}
	return rev, date, modified
}

// newRegistry is the registry /metrics serves: the Go and process
// collectors; the server's, the gateway's and resourced_build_info join it.
func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// buildInfo is resourced_build_info, 1 with the build's version, VCS
// revision and Go version as labels, as Prometheus's own
// prometheus_build_info: a dashboard joins on it to say which build runs.
func buildInfo() prometheus.Collector {
	rev, _, modified := vcsInfo(debug.ReadBuildInfo)
	switch {
	case rev == "":
		rev = "unknown"
	case modified:
		rev += "-modified"
	}
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "resourced_build_info",
		Help: "Always 1; the labels say which build runs: version, VCS revision (-modified for a dirty tree) and Go version.",
	}, []string{"version", "revision", "goversion"})
	g.WithLabelValues(version, rev, runtime.Version()).Set(1)
	return g
}
